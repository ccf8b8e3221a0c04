#!/usr/bin/env bash
# GPU run 17: the head (executors copy the build counters after each bind). Whole suite.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > $OUT/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|RunStatsCountWide" $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED)|^\[       OK|^\[  FAILED" $OUT/gpu-tests.log > $OUT/tests-summary.txt
