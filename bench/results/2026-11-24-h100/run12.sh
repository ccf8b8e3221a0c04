#!/usr/bin/env bash
# GPU run 12: Nsight Compute on the wgmma q/k/v and FFN-down products (BERT b=16 shapes) and on
# cuBLAS's kernels for the same shapes.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry
python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "bert b16" > $OUT/kernels.txt 2>&1
for n in bert_b16_qkvout bert_b16_ffn_down; do
  ncu --set full --import-source no --kernel-name regex:grape_kernel_wide --launch-skip 2 --launch-count 1 -o $OUT/$n \
    $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager --weights /tmp/bk/$n.safetensors --input x=/tmp/bk/${n}_x.npy --warmup 2 --iters 2 > $OUT/$n.log 2>&1
  ncu --import $OUT/$n.ncu-rep --page details > $OUT/$n.details.txt 2>&1
  ncu --import $OUT/$n.ncu-rep --page source --csv --print-source sass > $OUT/$n.sass.csv 2>&1
done
cat > /tmp/t.py <<'PY'
import torch, torch.nn.functional as F
for M, K, N in ((2048, 768, 768), (2048, 3072, 768)):
    x = torch.randn(M, K, device="cuda", dtype=torch.float16); w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    for _ in range(3): F.linear(x, w)
torch.cuda.synchronize()
PY
ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis --kernel-name regex:'gemm|sm90|cutlass|xmma|nvjet' --launch-count 6 python3 /tmp/t.py > $OUT/torch.details.txt 2>&1
rm -f $OUT/*.ncu-rep
