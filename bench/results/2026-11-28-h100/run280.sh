#!/usr/bin/env bash
# GPU run 280 (fortieth session): the new DecoderPlan.TheTraceWritesAStepALine (GRAPE_MONO_TRACE
# under the decoder plan: a line a step, the total the spans' sum, an unwritable file reported on
# stderr) on the final kernel (260cdbe), and the C API tests on a machine with a driver (every
# host input a session binds goes through device_of_pointer, now cuPointerGetAttributes).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gd
timeout 120 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.TheTrace*' > $R/run280-tests.log 2>&1
echo "trace test rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which|line" $R/run280-tests.log | head -30
LD_LIBRARY_PATH=$C timeout 120 $C/grape_capi_tests --gtest_color=no > $R/run280-capi.log 2>&1
echo "capi tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(FAILED|PASSED) |tests ran" $R/run280-capi.log | head -10
