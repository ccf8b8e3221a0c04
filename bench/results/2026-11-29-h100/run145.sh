#!/usr/bin/env bash
# GPU run 145 (one H100): after the review's refactor (one grape_cluster_rows loop for the row
# kernels), the row-kernel GPU tests, then compute-sanitizer memcheck, racecheck and initcheck on
# the clustered-row tests (kernels built first, outside the tool).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/grape-cache GRAPE_COMPILE_WORKER=$PWD/build-carry/grape
T=build-carry/grape_gpu_tests
F='GpuParity.LongRowNormsOverClustersOfBlocks:GpuParity.LongKnownRowReductions:GpuParity.RowAndSliceTemplates:GpuParity.Gpt2*:BlockSequences.*'
$T --gtest_filter="$F" 2>&1 | grep -E "^\[ *(OK|FAILED|PASSED) " 
S=$(ls -d /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
C='GpuParity.LongRowNormsOverClustersOfBlocks:GpuParity.LongKnownRowReductions'
for tool in memcheck racecheck initcheck; do
  timeout 60 $S --tool $tool $T --gtest_filter="$C" > $OUT/$tool.log 2>&1
  echo "$tool exit $?: $(grep -E 'SUMMARY' $OUT/$tool.log | tail -1) $(grep -E '^\[  PASSED|FAILED' $OUT/$tool.log | tail -1)"
done
