#!/usr/bin/env bash
# GPU run 69 (the head b69ffc4): SASS-level Nsight Compute of BERT b=16's out-projection (kernel 5,
# A = merge_heads view) and q projection (kernel 1, A direct), to find the out-projection's 1.6 M
# extra instructions (run 68).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r69; D=/tmp/in; mkdir -p $R $D
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda)
$B/grape bench "${A[@]}" --executor graph --warmup 3 --iters 10 2>&1 | grep -E "latency|autotuning"
for k in 5 1; do
  timeout 200 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((109*3+k)) --launch-count 1 -o $R/k$k \
    $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 > $R/ncu$k.log 2>&1
  ncu --import $R/k$k.ncu-rep --page source --csv --print-source sass > $R/k$k.sass.csv 2>&1
  python3 bench/ncu_sass_summary.py $R/k$k.sass.csv > $R/k$k.summary.txt 2>&1
  echo "== kernel $k"; head -45 $R/k$k.summary.txt
done
tar czf $OUT/r69.tgz -C /tmp r69
