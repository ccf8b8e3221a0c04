#!/usr/bin/env bash
# GPU run 62: compute-sanitizer on the new attention_mma (scores in shared memory, statistics and
# partial outputs exchanged between the two warps of a row group): memcheck, racecheck, initcheck
# on every GpuAttention case, with keys2 (the heuristic for these small cases) and keys1 forced.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r62; mkdir -p $R
t0=$(date +%s)
T=$B/grape_gpu_tests
CS="compute-sanitizer --error-exitcode 9 --print-limit 20"
F='Shapes/GpuAttention.*:Autotune.EveryConfigurationMatchesTheCpu'
for tool in memcheck racecheck initcheck; do
  timeout 500 $CS --tool $tool $T --gtest_color=no --gtest_filter="$F" > $R/$tool-keys2.log 2>&1 &
  GRAPE_TUNE_FORCE=keys1 timeout 500 $CS --tool $tool $T --gtest_color=no --gtest_filter='Shapes/GpuAttention.*' > $R/$tool-keys1.log 2>&1 &
done
wait
for f in $R/*.log; do
  echo "== $(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ')"
done
grep -h -B2 -A10 "Failure\|Uninitialized\|Hazard\|Invalid" $R/*.log | head -40
tar czf $OUT/r62.tgz -C /tmp r62
echo "total $(( $(date +%s) - t0 )) s"
