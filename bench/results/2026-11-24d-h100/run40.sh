#!/usr/bin/env bash
# GPU run 40: 16-byte copy kernels for data movement (take along a leading axis: the beam's cache
# reorders). The whole GPU suite; bench/beam with its peer; the beam's eager kernel profile; then
# the compute-sanitizer sweep (scripts/gpu-check.sh sanitize) in the time left.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r40; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
grep -E "DataMovement" $R/gpu-tests.log
timeout 240 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; grep -E 'tokens Grape vs peer' $R/beam.log | tail -1 | cut -c1-300; grep -A7 '^| variant' $R/beam.log | tail -7
$B/grape bench examples/gpt2.grp --entry beam_search --weights /tmp/beam/gpt2.safetensors --input prompt=/tmp/beam/beam_prompt.npy --backend cuda --executor eager --warmup 1 --iters 1 --profile > $R/beam-profile.txt 2>&1
head -10 $R/beam-profile.txt | cut -c1-180
cp /tmp/beam/*.json /tmp/beam/*.md $R/ 2>/dev/null
tar czf $OUT/r40.tgz -C /tmp r40
left=$(( 570 - ($(date +%s) - t0) ))
echo "sanitize budget $left s"
OUT=$R timeout $left scripts/gpu-check.sh sanitize > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(( $(date +%s) - t0 )) s"; tail -15 $R/sanitize.log
tar czf $OUT/r40.tgz -C /tmp r40
echo "total $(( $(date +%s) - t0 )) s"
