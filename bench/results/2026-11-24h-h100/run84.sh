#!/usr/bin/env bash
# GPU run 84 (the head): compute-sanitizer over the matrix-product paths changed in the fifteenth
# and sixteenth sessions (separable views of A, cluster K splits, the weight prefetch) and gelu.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r84; mkdir -p $R
t0=$(date +%s)
F='Paths/GpuMatrixProduct.*:GpuParity.GeluEveryValueCloseToTheCpu:Autotune.ClusterSplitsMatchTheCpuEagerAndInAGraph'
$B/grape_gpu_tests --gtest_filter="$F" > /dev/null 2>&1  # warm the kernel cache
timeout 250 compute-sanitizer --tool memcheck $B/grape_gpu_tests --gtest_filter="$F" > $R/memcheck.log 2>&1
echo "memcheck rc=$? $(( $(date +%s) - t0 )) s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/memcheck.log | head -4
timeout 120 compute-sanitizer --tool racecheck $B/grape_gpu_tests --gtest_filter='Paths/GpuMatrixProduct.*:Autotune.ClusterSplitsMatchTheCpuEagerAndInAGraph' > $R/racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t0 )) s"; grep -E "RACECHECK SUMMARY|PASSED|FAILED" $R/racecheck.log | head -4
grep -E "^\[       OK|^\[  FAILED" $R/memcheck.log | wc -l
