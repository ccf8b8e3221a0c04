#!/usr/bin/env bash
# GPU run 38: GEMV weight prefetch into L2 before the grid wait (GRAPE_WEIGHT_PREFETCH) and the
# graph edges into those kernels from the predecessor's launch-order port (GRAPE_GRAPH_EARLY_LAUNCH).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r38; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32)); np.save('$D/beam_prompt.npy', np.random.default_rng(1).integers(0, 50256, (1, 64)).astype(np.int32))"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-150; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|kernel build" | head -2; }
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy)
CFGS=("GRAPE_WEIGHT_PREFETCH=0" "GRAPE_GRAPH_EARLY_LAUNCH=0" "GRAPE_GRAPH_EARLY_LAUNCH=1")
{
for r in 1 2; do
  for cfg in "${CFGS[@]}"; do
    gb $cfg "${DEC[@]}" --executor graph --warmup 20 --iters 500
  done
done
for cfg in "${CFGS[@]}"; do
  gb $cfg examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
  gb $cfg examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --executor graph --warmup 1 --iters 5
done
} > $R/prefetch.txt 2>&1
cat $R/prefetch.txt
echo "bench $(( $(date +%s) - t0 )) s"
nsys --version >/dev/null 2>&1 && echo has-nsys
tar czf $OUT/r38.tgz -C /tmp r38
echo "total $(( $(date +%s) - t0 )) s"
