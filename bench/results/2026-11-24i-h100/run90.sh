#!/usr/bin/env bash
# GPU run 90 (1f780d0): the whole GPU suite; compute-sanitizer memcheck over the sibling-product
# tests and the cluster K splits (now sibling kernels); BERT b=1 eager profile.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc89
B=build-carry; R=/tmp/r90; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|tests ran" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
F='GpuParity.SiblingProductsEveryPath:Autotune.ClusterSplitsMatchTheCpuEagerAndInAGraph'
timeout 150 compute-sanitizer --tool memcheck $B/grape_gpu_tests --gtest_filter="$F" > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s) - t0 )) s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | head -4
echo "== profile bert b=1 eager"
$B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --warmup 5 --iters 50 --profile 2>&1 > $R/prof.txt
head -7 $R/prof.txt; grep -E "_k[1-8]_" $R/prof.txt | head -8
echo "total $(( $(date +%s) - t0 )) s"
