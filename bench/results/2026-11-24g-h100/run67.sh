#!/usr/bin/env bash
# GPU run 67 (matrix products read views of A through per-row sources, kAViewSplit; gelu by a
# Chebyshev erfc): the whole GPU suite; BERT forward b=16/b=1 (graph, tuned and GRAPE_TUNE=0), the
# b=16 per-kernel profile and ncu kernel sums; the BERT b=16 products under ncu.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r67; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { echo "== $*" | cut -c1-150; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do for b in 16 1; do
  A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200)
  echo "-- b=$b tuned"; gb "${A[@]}"
  echo "-- b=$b GRAPE_TUNE=0"; GRAPE_TUNE=0 gb "${A[@]}"
done; done
} > $R/bench.txt 2>&1
cat $R/bench.txt
for b in 16 1; do
  $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager --profile --warmup 5 --iters 20 > $R/profile-bert-b$b.txt 2>&1
  n=$(grep -oE "kernels per call [0-9]+" $R/profile-bert-b$b.txt | grep -oE "[0-9]+$")
  timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((n*3)) --launch-count $n $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager --warmup 2 --iters 2 > $R/ncu-bert-b$b.csv 2>/dev/null
  python3 bench/ncu_sum.py bert-b$b $R/ncu-bert-b$b.csv | head -4
done
head -24 $R/profile-bert-b16.txt | tail -16
tar czf $OUT/r67.tgz -C /tmp r67
echo "total $(( $(date +%s) - t0 )) s"
