#!/usr/bin/env bash
# GPU run 98 (the head): Nsight Compute full sections + SASS stall summary of BERT's attention
# kernel at batch 16 with the one-pass attention_mma.cuh (compare run 93's two-pass profile).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc98
B=build-carry; R=/tmp/r98; D=/tmp/bert; mkdir -p $R $D $OUT
python3 bench/bert/make_inputs.py $D
A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager)
$B/grape bench "${A[@]}" --warmup 2 --iters 2 > /dev/null 2>&1
timeout 200 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((85*3+2)) --launch-count 1 -o $R/a16 \
  $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.log 2>&1
ncu --import $R/a16.ncu-rep --page details --csv > $R/d.csv 2>&1
ncu --import $R/a16.ncu-rep --page source --csv --print-source sass > $R/s.csv 2>&1
python3 bench/ncu_sass_summary.py $R/s.csv > $OUT/attention1p-b16-sass-summary.txt 2>&1
grep -E '"(Duration|Elapsed Cycles|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc Active|Block Size|Grid Size|Dynamic Shared Memory Per Block)"' $R/d.csv | cut -d, -f12- > $OUT/attention1p-b16-details.txt
cat $OUT/attention1p-b16-details.txt; head -34 $OUT/attention1p-b16-sass-summary.txt
