#!/usr/bin/env bash
# GPU run 50: the new code under compute-sanitizer and the 128 x 96 tiles on every matrix-product
# parity case. Plain: Paths/GpuMatrixProduct.* with GRAPE_TUNE_FORCE=wgmma96 and =wgmma96x2.
# memcheck: the same with wgmma96; GpuParity.RowAndSliceTemplates (memcheck, racecheck); the
# autotuner's measuring path (Autotune.MeasuresOnce..., memcheck).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r50; mkdir -p $R
t0=$(date +%s)
T=$B/grape_gpu_tests
CS="compute-sanitizer --error-exitcode 9 --print-limit 20"
GRAPE_TUNE_FORCE=wgmma96 timeout 250 $T --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*' > $R/w96.log 2>&1 &
GRAPE_TUNE_FORCE=wgmma96x2 timeout 250 $T --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*' > $R/w96x2.log 2>&1 &
GRAPE_TUNE_FORCE=wgmma96 timeout 400 $CS --tool memcheck $T --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*' > $R/memcheck-w96.log 2>&1 &
timeout 400 $CS --tool memcheck $T --gtest_color=no --gtest_filter='GpuParity.RowAndSliceTemplates' > $R/memcheck-rows.log 2>&1 &
timeout 400 $CS --tool racecheck $T --gtest_color=no --gtest_filter='GpuParity.RowAndSliceTemplates' > $R/racecheck-rows.log 2>&1 &
timeout 400 $CS --tool memcheck $T --gtest_color=no --gtest_filter='Autotune.MeasuresOnce*' > $R/memcheck-tune.log 2>&1 &
wait
for f in $R/*.log; do
  echo "== $(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ')"
done
grep -h -B2 -A10 "Failure\|Invalid\|Hazard" $R/*.log | head -40
tar czf $OUT/r50.tgz -C /tmp r50
echo "total $(( $(date +%s) - t0 )) s"
