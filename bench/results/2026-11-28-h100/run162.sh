#!/usr/bin/env bash
# GPU run 162: the whole GPU suite at commit 3bb5031 (the tensor-core GEMV at 6 stages / 3
# blocks per SM, row-count variants), four shards, as scripts/gpu-check.sh runs it.
cd "$(dirname "$0")/../../.."
export GRAPE_COMPILE_WORKER=$PWD/build-carry/grape
GRAPE_SKIP_BENCH=1 OUT=$OUT timeout 290 scripts/gpu-check.sh run 2>&1 | tail -12
grep -cE "^\[       OK" $OUT/gpu-tests.log
