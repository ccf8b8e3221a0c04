#!/usr/bin/env bash
# GPU run 288 (forty-second session): the first steps' items kept in L2 for the next launch
# (GRAPE_DECODER_KEEP_FIRST=N: weights and the rows' past keys/values as evict_last; step 0 took
# 7.5 us in run 287, 2.2 of it waiting for its item from DRAM). Decoder-plan tests on the new
# binary; ncu of HEAD (a7b4403) against the new binary at N = 0, 1, 2, 4 (and 1 with
# GRAPE_DECODER_LM_L2=2); the new binary's trace; bench/run.sh's decode part.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 200 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run288-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run288-tests.log | head -40
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run288-tests.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for v in head:1:4 new:0:4 new:1:4 new:2:4 new:4:4 new:1:2 head:1:4 new:1:4; do
  IFS=: read b k lm <<< "$v"
  [ $b = head ] && bin=$C/grape_head || bin=$C/grape
  GRAPE_DECODER_KEEP_FIRST=$k GRAPE_DECODER_LM_L2=$lm GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|dram__|rror" | awk '{print $(NF-1), $NF}' | tr '\n' ' ' | sed "s/^/ncu $b keep$k lm$lm: /"; echo
done
for k in 0 1; do
  GRAPE_DECODER_KEEP_FIRST=$k GRAPE_CACHE_DIR=/tmp/gc-new GRAPE_MONO_TRACE=$R/run288-trace-keep$k.txt GRAPE_MONO_TRACE_STAMPS=$R/run288-stamps-keep$k.txt \
    timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "keep $k:"; grep -E "^(0|1|2|3|24) |total" $R/run288-trace-keep$k.txt
done
gzip $R/run288-stamps-keep*.txt
echo "a/b $(( $(date +%s) - t0 )) s"
unset GRAPE_TUNE
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 120 bench/run.sh $C/grape $R/bench > $R/run288-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null
python3 - $R/bench <<'PY'
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_decode_logits.npy").astype(np.float64)
for name in ("grape_decode", "grape_decode_mono"):
    g = np.load(d + "/" + name + "/out0.npy").astype(np.float64).reshape(t.shape)
    print("%s vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (name,
        np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
cp $R/bench/report.txt $R/run288-report.txt 2>/dev/null
rm -rf $R/bench
echo "total $(( $(date +%s) - t0 )) s"
