#!/usr/bin/env bash
# GPU run 33 (head): device inputs and caller streams; the whole GPU suite; compute-sanitizer
# memcheck on the new tests (device inputs, IF region).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r33; mkdir -p $R
t0=$(date +%s)
timeout 120 $B/grape_gpu_tests --gtest_color=no --gtest_filter='*DeviceInput*' > $R/device-inputs.log 2>&1
grep -E "^\[  (PASSED|FAILED)|^\[       OK|^\[  FAILED|Failure" -A3 $R/device-inputs.log | head -40
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
for f in '*DeviceInputs.*' 'GraphExecutor.LargePredicatedRegionIsAConditionalIfNode'; do
  timeout 200 compute-sanitizer --tool memcheck --leak-check full $B/grape_gpu_tests --gtest_color=no --gtest_filter="$f" > $R/memcheck-$(echo $f | tr -dc 'A-Za-z').log 2>&1
  echo "memcheck $f rc=$?"; grep -E "ERROR SUMMARY|LEAK SUMMARY|^\[  (PASSED|FAILED)" $R/memcheck-$(echo $f | tr -dc 'A-Za-z').log | head -4
done
tar czf $OUT/r33.tgz -C /tmp r33
echo "total $(( $(date +%s) - t0 )) s"
