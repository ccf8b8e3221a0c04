#!/usr/bin/env bash
# GPU run 120: row kernels with eight loads in flight per thread (grape_block_pass) on top of the
# block sequences. The row/reduction GPU tests first; bench/run.sh's decode and overhead (peers in
# the same run) and bench/beam (peer); generate and beam_search graph; eager profiles of both
# (per-kernel times against run 119's profile); then the whole GPU suite in 4 shards.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.LongRowSoftmax:GpuParity.RowNormsOfFewAndManyRows:GpuParity.TopK:GpuParity.RowAndSliceTemplates:BlockSequences.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -30
echo "row tests $(( $(date +%s) - t0 )) s"
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  bench/run.sh $PWD/$B/grape /tmp/b120 2>&1 | grep -v -i warn | tail -26
cp /tmp/b120/report.txt $R/run120-report.txt 2>/dev/null; cp /tmp/b120/beam/beam_results.md $R/run120-beam_results.md 2>/dev/null
echo "bench $(( $(date +%s) - t0 )) s"
D=/tmp/b120/beam
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
python3 -c "import numpy as np; np.save('/tmp/gen_prompt.npy', np.random.default_rng(3).integers(0, 50000, (5, 64)).astype(np.int32)); np.save('/tmp/gen_n.npy', np.array(128, np.int32))"
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=/tmp/gen_prompt.npy --input max_new=/tmp/gen_n.npy --backend cuda)
for r in 1 2; do
  echo -n "r$r beam graph: "; $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels|rror" | tr '\n' ' '; echo
  echo -n "r$r generate graph: "; $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels|rror" | tr '\n' ' '; echo
  echo -n "r$r generate seq=0 graph: "; GRAPE_SEQUENCES=0 $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels|rror" | tr '\n' ' '; echo
done
$B/grape bench "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -30 > $R/run120-beam-profile.txt
$B/grape bench "${GEN[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -30 > $R/run120-generate-profile.txt
head -16 $R/run120-beam-profile.txt; head -16 $R/run120-generate-profile.txt
echo "ab $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run120-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
