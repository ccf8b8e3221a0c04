#!/usr/bin/env bash
# GPU run 130 (the head): bench/run.sh's decode, overhead and beam with their PyTorch peers (outputs
# checked first; kernels, BERT, shapes and torch.compile skipped), then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
nvidia-smi -L
t0=$(date +%s)
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 260 bench/run.sh $PWD/$B/grape /tmp/b130 2>&1 | grep -v -i warn | tail -24
cp /tmp/b130/report.txt $R/run130-report.txt 2>/dev/null; cp /tmp/b130/beam/beam_results.md $R/run130-beam_results.md 2>/dev/null
echo "bench $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  (GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1; echo "shard $i rc=$?") &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run130-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
