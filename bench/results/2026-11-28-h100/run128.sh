#!/usr/bin/env bash
# GPU run 128 (the head): the cold build of every gpt2.grp kernel with the sequences' define after
# the CUDA headers (grape) against 8c3f550 (grape-base: the define first, no precompiled header
# for sequences), with and without sequences and NVRTC's precompiled header; bench/beam alone on
# the GPU (tokens compared, the PyTorch peer in the same run); the whole GPU suite; then
# compute-sanitizer racecheck over the sequence tests but beam search's (which racecheck does not
# finish: rc 11 in runs 125 and 127, memcheck clean).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
nvidia-smi -L
t0=$(date +%s)
TIMEFORMAT='%R s'
for bin in grape-base grape; do
  for env in "GRAPE_SEQUENCES=1" "GRAPE_SEQUENCES=0" "GRAPE_NVRTC_PCH=0"; do
    echo -n "cold build $bin $env: "; d=/tmp/cold-$bin-${env//=/}; { time (env $env GRAPE_CACHE_DIR=$d $B/$bin compile examples/gpt2.grp --arch sm_90 > /tmp/cc.txt); } 2>&1 | tr '\n' ' '; tail -1 /tmp/cc.txt
  done
done
echo "cold $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/beam/bench_beam.py --grape $PWD/$B/grape --out /tmp/beam 2>&1 | tail -14
cp /tmp/beam/beam_results.md $R/run128-beam_results.md 2>/dev/null
echo "beam $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  (GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 280 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1; echo "shard $i rc=$?") &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run128-gpu-tests-summary.txt
echo "suite $(( $(date +%s) - t0 )) s"
GRAPE_CACHE_DIR=/tmp/gcs timeout 150 compute-sanitizer --tool racecheck $B/grape_gpu_tests --gtest_color=no \
  --gtest_filter='BlockSequences.*:-BlockSequences.BeamSearchMatchesTheCpuWithFewerLaunches' > $R/run128-san-racecheck.log 2>&1; echo "racecheck rc=$?"
tail -3 $R/run128-san-racecheck.log
echo "total $(( $(date +%s) - t0 )) s"
