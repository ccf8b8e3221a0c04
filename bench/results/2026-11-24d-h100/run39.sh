#!/usr/bin/env bash
# GPU run 39: where a decode GEMV's time goes. bench_kernels' decode shapes (Grape eager profile
# against cuBLAS in a graph), then Nsight Compute (full set, SASS source counters) on Grape's
# c_fc, mlp c_proj and c_attn products and on cuBLAS's kernels for the same shapes.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r39; mkdir -p $R
t0=$(date +%s)
python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only decode > $R/kernels.txt 2>&1
cat $R/kernels.txt
for n in decode_c_fc decode_mlp_c_proj decode_c_attn; do
  ncu --set full --import-source no --kernel-name regex:grape --launch-skip 2 --launch-count 1 -o $R/$n \
    $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager --weights /tmp/bk/$n.safetensors --input x=/tmp/bk/${n}_x.npy --warmup 2 --iters 2 > $R/$n.log 2>&1
  ncu --import $R/$n.ncu-rep --page details > $R/$n.details.txt 2>&1
  ncu --import $R/$n.ncu-rep --page source --csv --print-source sass > $R/$n.sass.csv 2>&1
  grep -E "Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Grid Size|Theoretical Occ" $R/$n.details.txt | head -12
  echo "$n $(( $(date +%s) - t0 )) s"
done
cat > /tmp/t.py <<'PY'
import torch
for M, K, N in ((5, 768, 3072), (5, 3072, 768), (5, 768, 2304)):
    x = torch.randn(M, K, device="cuda", dtype=torch.float16); w = torch.randn(K, N, device="cuda", dtype=torch.float16)
    for _ in range(3): x @ w
torch.cuda.synchronize()
PY
ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --launch-count 12 python3 /tmp/t.py > $R/torch.details.txt 2>&1
grep -E "^  [a-zA-Z_].*\(|Duration|DRAM Throughput|Grid Size|Block Size" $R/torch.details.txt | head -60
rm -f $R/*.ncu-rep
tar czf $OUT/r39.tgz -C /tmp r39
echo "total $(( $(date +%s) - t0 )) s"
