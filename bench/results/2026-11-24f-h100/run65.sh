#!/usr/bin/env bash
# GPU run 65 (the heuristic takes 128 x 96 wgmma tiles when 128 x 128 ones make less than a wave):
# the whole GPU suite; bench_kernels --ncu on the BERT b=16 products; BERT forward (graph) tuned and
# GRAPE_TUNE=0, b=16 and b=1.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r65; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
timeout 200 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "bert b16" --ncu > $R/kernels-bert-b16.txt 2>&1
cat $R/kernels-bert-b16.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { echo "== $*" | cut -c1-150; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do
for b in 16 1; do
  A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200)
  echo "-- b=$b tuned"; gb "${A[@]}"
  echo "-- b=$b GRAPE_TUNE=0"; GRAPE_TUNE=0 gb "${A[@]}"
done
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
tar czf $OUT/r65.tgz -C /tmp r65
echo "total $(( $(date +%s) - t0 )) s"
