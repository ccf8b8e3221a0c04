#!/usr/bin/env bash
# GPU run 45: buffers hold their primary context (outputs outlive their session); the whole GPU
# suite with the fixed Autotune.* tests and Executors/*.OutputsOutliveTheirSession.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r45; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -E "OK \] (Autotune|Plan/Executors.OutputsOutlive)" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
grep -B5 "Segmentation\|Aborted" $R/gpu-tests.log | head
tar czf $OUT/r45.tgz -C /tmp r45
echo "total $(( $(date +%s) - t0 )) s"
