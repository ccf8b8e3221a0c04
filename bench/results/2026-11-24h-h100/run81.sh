#!/usr/bin/env bash
# GPU run 81 (the head): the prefetch call after the grid wait and predicate check. The whole GPU
# suite; overhead chain, decode_step, BERT b=1 / b=16 (graph) with GRAPE_PREFETCH=0 (no call in
# the source) and the default, alternating, two rounds.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r81; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-100; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for cfg in X=1 GRAPE_PREFETCH=0; do
  gb $cfg bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 1000
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
echo "total $(( $(date +%s) - t0 )) s"
