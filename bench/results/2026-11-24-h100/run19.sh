#!/usr/bin/env bash
# GPU run 19: compute-sanitizer initcheck (and racecheck on a 128 x 64 case) on the wgmma paths.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry
timeout 200 compute-sanitizer --tool initcheck $B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*case21:*GpuMatrixProduct*case25:*GpuMatrixProduct*case27' > $OUT/initcheck.log 2>&1 &
timeout 200 compute-sanitizer --tool racecheck $B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*case26' > $OUT/racecheck.log 2>&1 &
wait
grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $OUT/initcheck.log $OUT/racecheck.log
