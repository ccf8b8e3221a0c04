#!/usr/bin/env bash
# GPU run 127 (same machine as 126, right after): bench/beam (Grape graph and eager against the
# PyTorch graphed step + Python loop, tokens compared); compute-sanitizer memcheck and racecheck
# over the sequence tests (logs kept); then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
t0=$(date +%s)
(F='BlockSequences.*'; for tool in memcheck racecheck; do GRAPE_CACHE_DIR=/tmp/gcs timeout 400 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > $R/run127-san-$tool.log 2>&1; echo "sanitizer $tool rc=$?"; done) > /tmp/san.txt 2>&1 &
SAN=$!
timeout 200 python3 bench/beam/bench_beam.py --grape $PWD/$B/grape --out /tmp/beam --no-decode-step 2>&1 | tail -12
cp /tmp/beam/beam_results.md $R/run127-beam_results.md 2>/dev/null
echo "beam $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/san.txt; for t in memcheck racecheck; do tail -4 $R/run127-san-$t.log; done
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run127-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
