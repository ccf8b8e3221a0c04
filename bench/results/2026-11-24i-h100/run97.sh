#!/usr/bin/env bash
# GPU run 97 (6ce942b's code): compute-sanitizer memcheck and racecheck over the attention cases
# (the one-pass attention_mma.cuh and its two-warp merge through shared memory).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc97
B=build-carry; R=/tmp/r97; mkdir -p $R
t0=$(date +%s)
F='Shapes/GpuAttention.*'
$B/grape_gpu_tests --gtest_filter="$F" > $R/warm.log 2>&1; grep -E "^\[  (PASSED|FAILED)" $R/warm.log
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter="$F" > $R/$tool.log 2>&1
  echo "$tool rc=$? $(( $(date +%s) - t0 )) s"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $R/$tool.log | head -4
done
