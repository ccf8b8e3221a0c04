#!/usr/bin/env bash
# GPU run 113: deeper pipelines for the 128 x 64 and 64 x 64 wgmma entries, each compiled for its
# one depth (GRAPE_GEMM_WGMMA64_STAGES / GRAPE_GEMM_WGMMA_M64_STAGES; default 4 / 4). The
# autotune, matrix-product, sibling and BERT GPU tests at 8 / 8; BERT b=1 (graph) at 4/4, 4/6,
# 4/8, 6/6 and 8/8, two rounds; ncu durations of BERT b=1 layer 0 at 4/4 and 8/8.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r113; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
F='Paths/GpuMatrixProduct.*:GpuParity.Sibling*:GpuParity.Bert:Autotune.*'
for i in 0 1 2 3; do
  GRAPE_GEMM_WGMMA64_STAGES=8 GRAPE_GEMM_WGMMA_M64_STAGES=8 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc113-$i timeout 300 $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local c=$1; shift; echo "== $c $*" | cut -c1-30; GRAPE_CACHE_DIR=/tmp/gc-$c $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|rror" | head -2; }
for r in 1 2; do
  for c in 4-4 4-6 4-8 6-6 8-8; do
    export GRAPE_GEMM_WGMMA64_STAGES=${c%-*} GRAPE_GEMM_WGMMA_M64_STAGES=${c#*-}
    gb $c examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
  done
done
echo "bench $(( $(date +%s) - t0 )) s"
for c in 4-4 8-8; do
  export GRAPE_GEMM_WGMMA64_STAGES=${c%-*} GRAPE_GEMM_WGMMA_M64_STAGES=${c#*-}
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$c timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $c"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
