#!/usr/bin/env bash
# GPU run 36 (head): programmatic stream serialization in the eager executor. The whole GPU suite;
# GRAPE_EAGER_PDL=0 / 1 on overhead, decode_step, BERT b=1 and beam_search (eager), same run.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r36; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/ids1.npy', r.integers(0, 30522, (1, 128)).astype(np.int32)); np.save('$D/mask1.npy', np.ones((1, 128), bool)); np.save('$D/beam_prompt.npy', np.random.default_rng(1).integers(0, 50256, (1, 64)).astype(np.int32))"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-140; env $cfg $B/grape bench "$@" --backend cuda --executor eager 2>&1 | grep -E "latency" | head -1; }
{
for r in 1 2; do for cfg in GRAPE_EAGER_PDL=0 GRAPE_EAGER_PDL=1; do
  gb $cfg bench/overhead/overhead.grp --input x=$D/x_ovh.npy --warmup 20 --iters 300
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --warmup 20 --iters 300
  gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --warmup 10 --iters 200
done; done
for cfg in GRAPE_EAGER_PDL=0 GRAPE_EAGER_PDL=1; do
  gb $cfg examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --warmup 1 --iters 3
done
} > $R/eager-pdl.txt 2>&1
cat $R/eager-pdl.txt
tar czf $OUT/r36.tgz -C /tmp r36
echo "total $(( $(date +%s) - t0 )) s"
