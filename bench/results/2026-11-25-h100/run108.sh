#!/usr/bin/env bash
# GPU run 108: why 6 pipeline stages made BERT b=1's 128 x 64 wgmma products slower (run 105).
# Nsight Compute full sections + SASS stall summaries of layer 0's q/k/v (k1) and FFN up (k5) with
# build-carry/grape-s6 (ab65faa, 6 stages) and build-carry/grape (the head, 4 stages); the tuner's
# choice printed from each run's tuning cache.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r108; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 bench/bert/make_inputs.py $D > /dev/null
A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
for g in grape grape-s6; do
  GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${A[@]}" --warmup 2 --iters 2 > /dev/null 2>&1
  echo "== tuning decisions $g"; cut -c1-160 /tmp/gc-$g/tuning/tuning.txt 2>/dev/null | head -30
  for k in 1 5; do
    GRAPE_CACHE_DIR=/tmp/gc-$g timeout 120 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((85*3+k)) --launch-count 1 -f -o $R/$g-k$k \
      $B/$g bench "${A[@]}" --warmup 2 --iters 2 > /dev/null 2>&1
    ncu --import $R/$g-k$k.ncu-rep --page details --csv > $R/d.csv 2>&1
    ncu --import $R/$g-k$k.ncu-rep --page source --csv --print-source sass > $R/s.csv 2>&1
    python3 bench/ncu_sass_summary.py $R/s.csv > $OUT/s6-$g-k$k-sass.txt 2>&1
    grep -E '"(Duration|Dynamic Shared Memory Per Block|Grid Size|L2 Hit Rate|Memory Throughput|Executed Ipc Active|L1/TEX Hit Rate|Achieved Occupancy)"' $R/d.csv | sed 's/"//g' | awk -F, '{print $(NF-3)": "$(NF-1)" "$(NF-2)}' > $OUT/s6-$g-k$k-details.txt
    echo "== $g k$k"; cat $OUT/s6-$g-k$k-details.txt; sed -n 1,12p $OUT/s6-$g-k$k-sass.txt; grep "^{" $OUT/s6-$g-k$k-sass.txt
  done
done
echo "total $(( $(date +%s) - t0 )) s"
