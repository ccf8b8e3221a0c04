#!/usr/bin/env bash
# GPU run 114 (the head: 64 x 64 wgmma tiles at 8 stages): the whole GPU suite, then bench/run.sh without the kernel, beam and
# shape benchmarks (decode and overhead with their peers, BERT with its peer, everything checked
# first).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r114; mkdir -p $R $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc114-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gc114-0 timeout 150 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter='Autotune.ClusterSplits*' --gtest_color=no > $R/san-$tool.log 2>&1
  echo "$tool: $(grep -E '^\[  (PASSED|FAILED) ' $R/san-$tool.log | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log)"
done
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  bench/run.sh $PWD/$B/grape /tmp/b114 2>&1 | grep -v -i warn | tail -30
cp /tmp/b114/report.txt $OUT/run114-report.txt 2>/dev/null; cp /tmp/b114/bert/bert_results.md $OUT/run114-bert_results.md 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
