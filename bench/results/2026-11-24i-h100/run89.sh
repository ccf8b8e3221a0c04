#!/usr/bin/env bash
# GPU run 89: sibling products' epilogue branch once per tile (grape_tile_store). Sibling, autotune
# and matrix-path tests; ncu kernel durations of BERT b=16 (first 10 kernels), siblings off / on;
# graph latency of BERT b=1 / b=16 and decode_step, siblings off / on, two rounds.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc89
B=build-carry; R=/tmp/r89; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
timeout 250 $B/grape_gpu_tests --gtest_filter='Autotune.*:GpuParity.Sibling*:Paths/GpuMatrixProduct.*' --gtest_color=no > $R/t.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/t.log; grep -B2 -A10 Failure $R/t.log | head -30
echo "tests $(( $(date +%s) - t0 )) s"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda)
for cfg in "GRAPE_SIBLINGS=0 109" "X=1 85"; do
  set -- $cfg
  env $1 $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 2>&1 | grep autotuning
  env $1 timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $(($2*3)) --launch-count $2 $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== $1"; python3 bench/ncu_sum.py bert-b16 $R/ncu.csv | cut -c1-100; python3 bench/ncu_kernels.py $R/ncu.csv 0 10
done
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-110; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
for r in 1 2; do for cfg in GRAPE_SIBLINGS=0 X=1; do
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
echo "total $(( $(date +%s) - t0 )) s"
