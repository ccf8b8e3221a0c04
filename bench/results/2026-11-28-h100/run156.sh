#!/usr/bin/env bash
# GPU run 156 (the session's final head): the mono executor's tests and the executor suites that
# share the refactored test helper (read_text), and decode_step graph/mono once more.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$B
timeout 400 $C/grape_gpu_tests --gtest_filter='MonoExecutor.*:Plan/Executors.ControlFlowCases/*:GpuParity.ControlFlowCases*:AutoExecutor.*ControlFlow*' > $R/tests.log 2>&1; echo "tests rc=$?"
grep -E "^\[  |^\[       OK|Failure" $R/tests.log | tail -14
