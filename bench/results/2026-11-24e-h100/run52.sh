#!/usr/bin/env bash
# GPU run 52: compute-sanitizer initcheck (the tool run 50 did not run) on the new code: the moved
# row/slice templates, the tuner's measuring path (zeroed scratch buffers), the matrix-product
# parity cases with the 128 x 96 tiles forced; racecheck on the wgmma96 cases.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r52; mkdir -p $R
t0=$(date +%s)
T=$B/grape_gpu_tests
CS="compute-sanitizer --error-exitcode 9 --print-limit 20"
timeout 400 $CS --tool initcheck $T --gtest_color=no --gtest_filter='GpuParity.RowAndSliceTemplates' > $R/initcheck-rows.log 2>&1 &
timeout 400 $CS --tool initcheck $T --gtest_color=no --gtest_filter='Autotune.MeasuresOnce*' > $R/initcheck-tune.log 2>&1 &
GRAPE_TUNE_FORCE=wgmma96 timeout 400 $CS --tool initcheck $T --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*' > $R/initcheck-w96.log 2>&1 &
GRAPE_TUNE_FORCE=wgmma96 timeout 400 $CS --tool racecheck $T --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*' > $R/racecheck-w96.log 2>&1 &
wait
for f in $R/*.log; do
  echo "== $(basename $f): $(grep -E '^\[  (PASSED|FAILED) ' $f | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $f | tr '\n' ' ')"
done
grep -h -B2 -A10 "Failure\|Uninitialized\|Hazard" $R/*.log | head -40
tar czf $OUT/r52.tgz -C /tmp r52
echo "total $(( $(date +%s) - t0 )) s"
