#!/usr/bin/env bash
# GPU run 29: compute-sanitizer on the topk split over blocks and on the graph node rewrites.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r29; mkdir -p $R
t0=$(date +%s)
$B/grape_gpu_tests --gtest_filter='GpuParity.TopK' > /dev/null 2>&1   # warm the kernel cache
for tool in memcheck racecheck initcheck; do
  timeout 200 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.TopK' > $R/topk-$tool.log 2>&1
  echo "topk $tool rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/topk-$tool.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $R/topk-$tool.log)"
done
for tool in memcheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_color=no --gtest_filter='GraphExecutor.Shape*' > $R/shapes-$tool.log 2>&1
  echo "shapes $tool rc=$? $(grep -E 'ERROR SUMMARY' $R/shapes-$tool.log | tail -1) $(grep -E '^\[  (PASSED|FAILED)' $R/shapes-$tool.log)"
done
echo "total $(( $(date +%s) - t0 )) s"
tar czf $OUT/r29.tgz -C /tmp r29
