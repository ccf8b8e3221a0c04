#!/usr/bin/env bash
# GPU run 72 (row norms by chunks of eight: 16-byte loads and stores): the whole GPU
# suite; BERT forward b=16/b=1 (graph, tuned, twice); ncu kernel sums; SASS profile of the
# layer norms (kernels 6 and 9) at b=16; the overhead workload (graph, f32 softmax: unchanged path).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r72; D=/tmp/in; mkdir -p $R $D
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
done; done
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
gb bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
} > $R/bench.txt 2>&1
cat $R/bench.txt
for b in 16 1; do
  A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((109*3)) --launch-count 109 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu-bert-b$b.csv 2>/dev/null
  python3 bench/ncu_sum.py bert-b$b $R/ncu-bert-b$b.csv | head -4
done
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager)
for k in 6 9; do
  timeout 200 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((109*3+k)) --launch-count 1 -o $R/k$k \
    $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu$k.log 2>&1
  ncu --import $R/k$k.ncu-rep --page source --csv --print-source sass > $R/k$k.sass.csv 2>&1
  python3 bench/ncu_sass_summary.py $R/k$k.sass.csv > $R/k$k.summary.txt 2>&1
  echo "== kernel $k"; head -30 $R/k$k.summary.txt
done
rm -f $R/*.ncu-rep
tar czf $OUT/r72.tgz -C /tmp r72
echo "total $(( $(date +%s) - t0 )) s"
