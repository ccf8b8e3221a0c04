#!/usr/bin/env bash
# GPU run 119 (twenty-first session): block sequences (scheduler/sequence.h). The new GPU tests
# first; bench/beam with its PyTorch peer (sequences on, the default); beam_search and generate
# with sequences on and off (GRAPE_SEQUENCES=0), same binary, graph and eager, alternating; an
# eager profile of beam_search; then the whole GPU suite in 4 shards.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='BlockSequences.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -40
echo "seq tests $(( $(date +%s) - t0 )) s"
python3 bench/beam/bench_beam.py --grape $PWD/$B/grape --out /tmp/beam 2>&1 | grep -v -i warn | tail -14
cp /tmp/beam/beam_results.md $R/run119-beam_results.md 2>/dev/null
echo "beam $(( $(date +%s) - t0 )) s"
D=/tmp/beam
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=/tmp/gen_prompt.npy --input max_new=/tmp/gen_n.npy --backend cuda)
python3 -c "import numpy as np; np.save('/tmp/gen_prompt.npy', np.random.default_rng(3).integers(0, 50000, (5, 64)).astype(np.int32)); np.save('/tmp/gen_n.npy', np.array(128, np.int32))"
for r in 1 2; do
  for s in 1 0; do
    for ex in graph eager; do
      echo -n "r$r seq=$s beam $ex: "; GRAPE_SEQUENCES=$s $B/grape bench "${BEAM[@]}" --executor $ex --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels|syncs|rror" | tr '\n' ' '; echo
    done
    echo -n "r$r seq=$s generate graph: "; GRAPE_SEQUENCES=$s $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels|rror" | tr '\n' ' '; echo
  done
done
echo "ab $(( $(date +%s) - t0 )) s"
$B/grape bench "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -40 > $R/run119-beam-profile.txt
head -30 $R/run119-beam-profile.txt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run119-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
