#!/usr/bin/env bash
# GPU run 106: does the L1/shared-memory split change between kernels cost time? The same binary
# with every kernel's preferred carveout left to the driver (GRAPE_SMEM_CARVEOUT unset), all shared
# (100) and half (50): BERT b=1 / b=16, decode_step and the overhead chain (graph), alternating,
# two rounds; ncu durations of BERT b=1 layer 0 for unset and 100.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc106
B=build-carry; R=/tmp/r106; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 bench/bert/make_inputs.py $D > /dev/null
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
gb() { local c=$1; shift; echo "== carveout $c $*" | cut -c1-70; env $( [ $c = unset ] || echo GRAPE_SMEM_CARVEOUT=$c ) $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for c in unset 100 50; do
  for b in 1 16; do
    gb $c examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
  gb $c examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  gb $c bench/overhead/overhead.grp --input x=$D/x_overhead.npy --executor graph --warmup 20 --iters 500
done; done
for c in unset 100; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  env $( [ $c = unset ] || echo GRAPE_SMEM_CARVEOUT=$c ) timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 carveout $c"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
