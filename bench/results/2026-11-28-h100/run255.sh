#!/usr/bin/env bash
# GPU run 255 (thirty-eighth session): the whole GPU suite (4 shards) after `auto` learned to run
# decoder-plan calls; then decode_step's first call (kernel build and weight layout, cold and warm
# kernel cache) under mono, and graph / auto / mono latency in the same run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 330 $C/grape_gpu_tests --gtest_color=no > $R/run255-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run255-gpu-tests.[0-3].log > $R/run255-gpu-tests.log; rm $R/run255-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^\[       OK \] (DecoderPlan|AutoExecutor)" $R/run255-gpu-tests.log
gzip -f $R/run255-gpu-tests.log
echo "gpu tests $(( $(date +%s) - t0 )) s"
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc-first
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for c in cold warm; do
  s=$(date +%s%N)
  timeout 200 $C/grape bench "${B[@]}" --executor mono --warmup 0 --iters 1 --json 2>&1 | python3 -c "import json,sys; j=json.loads(sys.stdin.read()); print('first call ($c kernel cache): %.1f ms, kernel build %.0f ms, plan %s' % (j['median_ms'], j['compile_ms'], j['plan']))"
  echo "  whole process $(( ($(date +%s%N) - s) / 1000000 )) ms"
done | tee $R/run255-first.txt
export GRAPE_CACHE_DIR=/tmp/gc
bench() { timeout 120 $C/grape bench "${B[@]}" --warmup 20 --iters 300 "$@" 2>&1 | grep -E "latency|plan|executor|rror"; }
{
  bench --executor graph | sed "s/^/graph: /"
  bench --executor auto | sed "s/^/auto: /"
  bench --executor mono | sed "s/^/mono: /"
  bench --executor graph | sed "s/^/graph: /"
  bench --executor auto | sed "s/^/auto: /"
  bench --executor mono | sed "s/^/mono: /"
} | tee $R/run255-bench.txt
echo "total $(( $(date +%s) - t0 )) s"
