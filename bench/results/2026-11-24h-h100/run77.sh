#!/usr/bin/env bash
# GPU run 77 (the head): where BERT b=1's products lose to cuBLAS. bench_kernels --ncu on the b=1
# shapes and both BERT attention shapes; the per-kernel ncu list of one b=1 forward (tuning cache
# warm); full ncu sections + SASS summaries of its q product (kernel 1) and FFN down (kernel 8).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r77; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
python3 bench/kernels/bench_kernels.py $B/grape $R/k --only "bert b1" --ncu > $R/kernels-b1.txt 2>&1
python3 bench/kernels/bench_kernels.py $B/grape $R/k2 --only "attention bert" --ncu > $R/kernels-attn.txt 2>&1
tail -8 $R/kernels-b1.txt; tail -5 $R/kernels-attn.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
$B/grape bench "${A[@]}" --warmup 2 --iters 2 2>&1 | grep autotuning
timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
  --launch-skip $((109*3)) --launch-count 109 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu-bert-b1.csv 2>/dev/null
python3 bench/ncu_sum.py bert-b1 $R/ncu-bert-b1.csv | cut -c1-150; python3 bench/ncu_kernels.py $R/ncu-bert-b1.csv 0 19
for k in 1 8; do
  timeout 200 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((109*3+k)) --launch-count 1 -o $R/k$k \
    $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu$k.log 2>&1
  ncu --import $R/k$k.ncu-rep --page details --csv > $R/k$k.details.csv 2>&1
  ncu --import $R/k$k.ncu-rep --page source --csv --print-source sass > $R/k$k.sass.csv 2>&1
  python3 bench/ncu_sass_summary.py $R/k$k.sass.csv > $R/k$k.summary.txt 2>&1
  echo "== kernel $k"; head -40 $R/k$k.summary.txt
  grep -E '"(Duration|Elapsed Cycles|Registers Per Thread|Achieved Occupancy|Memory Throughput|DRAM Throughput|L2 Hit Rate|Grid Size|Dynamic Shared Memory Per Block)"' $R/k$k.details.csv | cut -d, -f12- | head -12
done
rm -f $R/*.ncu-rep
tar czf $OUT/r77.tgz -C /tmp r77
echo "total $(( $(date +%s) - t0 )) s"
