#!/usr/bin/env bash
# GPU run 101 (22e590f): why BERT b=1's small products take 9-10 us where cuBLAS takes 4-7.
# Nsight Compute full sections + SASS stall summaries of BERT b=1 layer 0's merged q/k/v (k1), output
# projection (k3), layer norm (k4) and FFN down (k6), BERT b=16's attention (k2); cuBLAS's kernel
# for the output projection's shape (torch F.linear, 128 x 768 x 768 f16) the same way.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc101
B=build-carry; R=/tmp/r101; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 bench/bert/make_inputs.py $D > /dev/null
prof() {  # name, batch, kernel index
  local name=$1 b=$2 k=$3
  local A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  $B/grape bench "${A[@]}" --warmup 1 --iters 1 > /dev/null 2>&1
  timeout 120 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((85*3+k)) --launch-count 1 -f -o $R/$name \
    $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu-$name.log 2>&1
  ncu --import $R/$name.ncu-rep --page details --csv > $R/d.csv 2>&1
  ncu --import $R/$name.ncu-rep --page source --csv --print-source sass > $R/s.csv 2>&1
  python3 bench/ncu_sass_summary.py $R/s.csv > $OUT/$name-sass-summary.txt 2>&1
  grep -E '"(Duration|Elapsed Cycles|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc Active|Block Size|Grid Size|Dynamic Shared Memory Per Block|Memory Throughput|DRAM Throughput|L2 Hit Rate|Compute \(SM\) Throughput)"' $R/d.csv | cut -d, -f12- > $OUT/$name-details.txt
  echo "== $name"; cat $OUT/$name-details.txt; head -28 $OUT/$name-sass-summary.txt
}
prof b1-qkv 1 1
prof b1-outproj 1 3
prof b1-ln 1 4
prof b1-ffndown 1 6
prof b16-attention 16 2
cat > $R/lin.py <<'PY'
import torch, torch.nn.functional as F
a = torch.randn(128, 768, device="cuda", dtype=torch.half); w = torch.randn(768, 768, device="cuda", dtype=torch.half)
b = torch.randn(768, device="cuda", dtype=torch.half)
for _ in range(5): y = F.linear(a, w, b)
torch.cuda.synchronize()
PY
timeout 120 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip 3 --launch-count 1 -f -o $R/cublas \
  python3 $R/lin.py > $R/ncu-cublas.log 2>&1
ncu --import $R/cublas.ncu-rep --page details --csv > $R/d.csv 2>&1
ncu --import $R/cublas.ncu-rep --page source --csv --print-source sass > $R/s.csv 2>&1
python3 bench/ncu_sass_summary.py $R/s.csv > $OUT/cublas-outproj-sass-summary.txt 2>&1
grep -E '"(Duration|Elapsed Cycles|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|Executed Ipc Active|Block Size|Grid Size|Dynamic Shared Memory Per Block|Memory Throughput|DRAM Throughput|L2 Hit Rate|Compute \(SM\) Throughput)"' $R/d.csv | cut -d, -f5,12- > $OUT/cublas-outproj-details.txt
echo "== cublas"; cat $OUT/cublas-outproj-details.txt; head -28 $OUT/cublas-outproj-sass-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
