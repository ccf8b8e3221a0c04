#!/usr/bin/env bash
# GPU run 281 (fortieth session): the C API tests on a machine with a GPU again, after run 280
# found two of them assuming the fixture's default-backend session was a CPU session
# (DeviceInputBufferOnTheCpu, Stream): they now open a CPU session themselves. Also the C test.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gd LD_LIBRARY_PATH=$C
timeout 120 $C/grape_capi_tests --gtest_color=no > $R/run281-capi.log 2>&1
echo "capi tests rc=$?"; grep -E "^\[ +(FAILED|PASSED) |tests ran" $R/run281-capi.log | head -10
timeout 60 $C/grape_capi_c_test > $R/run281-capi-c.log 2>&1; echo "capi C test rc=$?"; tail -3 $R/run281-capi-c.log
