#!/usr/bin/env bash
# GPU run 87: BERT b=16 with sibling products. ncu kernel durations of one eager call with
# GRAPE_SIBLINGS=0 and the default (tuning cache warm); graph latency with the tuner off
# (GRAPE_TUNE=0, the heuristic's tiles) beside the default, siblings on and off.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r87; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda)
for cfg in "GRAPE_SIBLINGS=0 109" "X=1 85"; do
  set -- $cfg
  env $1 $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 2>&1 | grep autotuning
  env $1 timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $(($2*3)) --launch-count $2 $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== $1"; python3 bench/ncu_sum.py bert-b16 $R/ncu.csv | cut -c1-150; python3 bench/ncu_kernels.py $R/ncu.csv 0 10
done
gb() { echo "== $*" | cut -c1-60; env "$@" $B/grape bench "${A[@]}" --executor graph --warmup 10 --iters 200 2>&1 | grep -E "latency|autotuning" | head -2; }
for r in 1 2; do
  gb GRAPE_SIBLINGS=0; gb X=1; gb GRAPE_SIBLINGS=0 GRAPE_TUNE=0; gb GRAPE_TUNE=0
done
echo "total $(( $(date +%s) - t0 )) s"
