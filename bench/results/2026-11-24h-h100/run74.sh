#!/usr/bin/env bash
# GPU run 74: each matrix product's weight prefetched into L2 by the product before it (KParams::prefetch;
# GRAPE_PREFETCH=2 default, 1 own weight before the wait, 0 none). The whole GPU suite; decode_step,
# generate under three configurations, same binary, two rounds.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r74; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32))"
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-120; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
{
for r in 1 2; do for cfg in X=1 GRAPE_PREFETCH=1 GRAPE_PREFETCH=0; do
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
  gb $cfg examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
done; done
} > $R/bench.txt 2>&1
cat $R/bench.txt
tar czf $OUT/r74.tgz -C /tmp r74
echo "total $(( $(date +%s) - t0 )) s"
