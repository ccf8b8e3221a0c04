#!/usr/bin/env bash
# GPU run 193 (the final library code): the GPU tests run 190 did not run on this binary (the rest
# of the suite: every-op parity, graph / auto / mono executors, device inputs, the C API on CUDA...),
# four shards, 230 s each at most (a shard cut short is reported as such).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
F='*-GpuParity.RowAndSliceTemplates:GpuParity.CopyKernels*:GpuParity.ControlFlowCases:GpuParity.Gpt2*:BlockSequences.*:MonoExecutor.Gpt2DecodeSteps'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 230 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run193-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[ RUN" $R/run193-gpu-tests.log | grep -v "RUN" ; grep -c "^\[       OK" $R/run193-gpu-tests.log
grep -B2 -A10 "Failure" $R/run193-gpu-tests.log | head -30
gzip -f $R/run193-gpu-tests.log
