#!/usr/bin/env bash
# GPU run 118 (the head after runs 116-117's attention change): bench/run.sh without the kernel,
# beam and shape benchmarks (decode and overhead with their peers, BERT with its PyTorch peer,
# everything checked first); bench_kernels --ncu on the three attention shapes (SDPA in the same
# run); BERT b=1 / b=16 graph time, grape-base (dd4a18d) and the head alternating, three rounds;
# then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  bench/run.sh $PWD/$B/grape /tmp/b118 2>&1 | grep -v -i warn | tail -24
cp /tmp/b118/report.txt $R/run118-report.txt 2>/dev/null; cp /tmp/b118/bert/bert_results.md $R/run118-bert_results.md 2>/dev/null
echo "bench $(( $(date +%s) - t0 )) s"
python3 bench/kernels/bench_kernels.py $B/grape /tmp/k118 --only attention --ncu > $R/run118-kernels-attention.txt 2>&1
tail -4 $R/run118-kernels-attention.txt
python3 bench/bert/make_inputs.py $D > /dev/null
for r in 1 2 3; do
  for g in grape-base grape; do
    for b in 1 16; do
      echo -n "r$r $g b=$b: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | grep -E "latency|rror" | head -1
    done
  done
done
echo "ab $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 280 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -30
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run118-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
