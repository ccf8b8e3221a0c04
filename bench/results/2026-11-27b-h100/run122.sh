#!/usr/bin/env bash
# GPU run 122 (the head): reductions of long known rows on 1024 threads. The row/reduction and
# sequence GPU tests; bench/run.sh's decode, overhead and beam (peers in the same run); A/B of
# generate and beam_search graph time, three binaries alternating (grape-seq: block sequences
# only, 859324d's templates; grape-b8: + eight loads in flight in every row kernel, run 121;
# grape: the head); eager profiles' argmax lines; then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; mkdir -p $R
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.LongKnownRowReductions:GpuParity.RowAndSliceTemplates:GpuParity.LongRowSoftmax:GpuParity.Gpt2*:BlockSequences.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -30
echo "tests $(( $(date +%s) - t0 )) s"
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 240 bench/run.sh $PWD/$B/grape /tmp/b122 2>&1 | grep -v -i warn | tail -24
cp /tmp/b122/report.txt $R/run122-report.txt 2>/dev/null; cp /tmp/b122/beam/beam_results.md $R/run122-beam_results.md 2>/dev/null
echo "bench $(( $(date +%s) - t0 )) s"
D=/tmp/b122/beam
python3 -c "import numpy as np; np.save('/tmp/gen_prompt.npy', np.random.default_rng(3).integers(0, 50000, (5, 64)).astype(np.int32)); np.save('/tmp/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=/tmp/gen_prompt.npy --input max_new=/tmp/gen_n.npy --backend cuda)
for g in grape-seq grape-b8 grape; do GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor graph --warmup 1 --iters 1 > /dev/null 2>&1; done
for r in 1 2; do
  for g in grape-seq grape-b8 grape; do
    echo -n "r$r $g generate graph: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | tr '\n' ' '; echo
    echo -n "r$r $g beam graph: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6 2>&1 | grep -E "latency" | tr '\n' ' '; echo
  done
done
for g in grape-seq grape-b8 grape; do
  echo "$g generate eager profile:"; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor eager --warmup 1 --iters 2 --profile 2>&1 | grep -E "argmax" | head -2
done
echo "ab $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 250 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run122-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
