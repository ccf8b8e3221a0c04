#!/usr/bin/env bash
# GPU run 91: the wgmma epilogue with all 16 rows of a warp unrolled (loads issued together)
# against 1f780d0 (build-carry/grape-base: 4 rows at a time). BERT b=1 / b=16 and decode_step
# (graph), alternating, two rounds; ncu kernel durations of BERT b=1's first layer for both.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r91; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-100; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for g in grape-base grape; do
  gb $g examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $g examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
for g in grape-base grape; do
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 200 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $g"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-100; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
