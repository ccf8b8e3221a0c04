#!/usr/bin/env bash
# GPU run 176 (the head, 5212a51 + docs): compute-sanitizer racecheck over every example and
# control-flow case on the graph executor, then the sibling-update and GPT-2 GPU tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gs
t0=$(date +%s)
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
timeout 240 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools racecheck \
  --executors graph --jobs 8 > $R/run176-sanitize-racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $R/run176-sanitize-racecheck.log
rm -rf $R/san
F='GpuParity.CopyKernelsOfEveryLengthAndAlignment:GpuParity.RowAndSliceTemplates:GpuParity.ControlFlowCases:GpuParity.Gpt2*:BlockSequences.*:MonoExecutor.Gpt2DecodeSteps'
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > $R/run176-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run176-gpu-tests.log
