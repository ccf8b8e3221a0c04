#!/usr/bin/env bash
# GPU run 111: one epilogue per wgmma tile function (the main loop dispatched by stage count
# inside it) and one main loop in the 128 x 64 entry point (build-carry/grape) against
# build-carry/grape-base (63624ad) and grape-epi4 (the same with the full-tile epilogue unrolled
# 4 rows at a time instead of 16): the matrix-product, sibling, autotune and BERT GPU tests; BERT
# b=1 / b=16 (graph), two rounds; ncu durations of BERT b=1 layer 0 for each.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r111; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
F='Paths/GpuMatrixProduct.*:GpuParity.Sibling*:GpuParity.Bert:Autotune.*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc111-$i timeout 300 $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-40; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency|rror" | head -2; }
for r in 1 2; do
  for g in grape-base grape grape-epi4; do
    for b in 1 16; do
      gb $g examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
    done
  done
done
echo "bench $(( $(date +%s) - t0 )) s"
for g in grape-base grape grape-epi4; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $g"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
