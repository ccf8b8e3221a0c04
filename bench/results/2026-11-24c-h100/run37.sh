#!/usr/bin/env bash
# GPU run 37 (head, after the review commit): the whole GPU suite; compute-sanitizer memcheck,
# racecheck and initcheck on this session's new GPU tests (long softmax rows, IF region, device
# inputs and caller streams) and a PDL graph (the 100-kernel chain test).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r37; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
F='GpuParity.LongRowSoftmax:GraphExecutor.LargePredicatedRegionIsAConditionalIfNode:Executors/DeviceInputs.*:Plan/Executors.ControlFlowCases/*'
for tool in memcheck racecheck initcheck; do
  timeout 150 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - t0 )) s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)" $R/$tool.log | head -4
done
tar czf $OUT/r37.tgz -C /tmp r37
echo "total $(( $(date +%s) - t0 )) s"
