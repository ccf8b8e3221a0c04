#!/usr/bin/env bash
# GPU run 44: the Autotune.* GPU tests (fixed .grp syntax) and the whole suite's other tests that
# touch tuned kernels; per-kernel device times under Nsight Compute (--clock-control none
# --cache-control none, the same flags for both sides) of Grape's BERT b=16 / MLP products and
# attention against torch.matmul / scaled_dot_product_attention, 3-5 launches each.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r44; mkdir -p $R
t0=$(date +%s)
timeout 300 $B/grape_gpu_tests --gtest_color=no --gtest_filter='Autotune.*:GpuParity.RowAndSliceTemplates:GpuParity.MatrixProduct*' > $R/gpu-tests.log 2>&1
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
for o in b16 mlp attention; do timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "$o" >> $R/kernels.txt 2>&1; done
cat $R/kernels.txt | cut -c1-110
echo "kernels $(( $(date +%s) - t0 )) s"
NCU="ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum"
for n in bert_b16_qkvout bert_b16_ffn_up bert_b16_ffn_down mlp_fc1_b256 mlp_fc2_b256; do
  $NCU --kernel-name regex:grape --launch-skip 3 --launch-count 4 $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager \
    --weights /tmp/bk/$n.safetensors --input x=/tmp/bk/${n}_x.npy --warmup 3 --iters 3 > $R/ncu-$n.txt 2>&1
  echo "$n: $(grep -E 'gpu__time_duration' $R/ncu-$n.txt | awk '{print $NF}' | tr '\n' ' ') $(grep -oE 'grape_kernel[a-z0-9_]* \([0-9]+' $R/ncu-$n.txt | head -1)"
done
for n in attention_decode attention_bert_s128 attention_bert_s128_b16; do
  $NCU --kernel-name regex:grape --launch-skip 3 --launch-count 4 $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager \
    --input q=/tmp/bk/${n}_q.npy --input k=/tmp/bk/${n}_k.npy --input v=/tmp/bk/${n}_v.npy --warmup 3 --iters 3 > $R/ncu-$n.txt 2>&1
  echo "$n: $(grep -E 'gpu__time_duration' $R/ncu-$n.txt | awk '{print $NF}' | tr '\n' ' ')"
done
cat > /tmp/t.py <<'PY'
import torch
F = torch.nn.functional
for M, K, N in ((2048, 768, 768), (2048, 768, 3072), (2048, 3072, 768), (256, 4096, 16384), (256, 16384, 4096)):
    x = torch.randn(M, K, device="cuda", dtype=torch.float16); w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    for _ in range(5): F.linear(x, w)
    torch.cuda.synchronize()
for B, H, S, KV in ((5, 12, 1, 129), (1, 12, 128, 128), (16, 12, 128, 128)):
    q = torch.randn(B, H, S, 64, device="cuda", dtype=torch.float16)
    k = torch.randn(B, H, KV, 64, device="cuda", dtype=torch.float16); v = torch.randn_like(k)
    torch.cuda.synchronize()
    for _ in range(5): F.scaled_dot_product_attention(q, k, v)
    torch.cuda.synchronize()
PY
$NCU --kernel-name regex:'nvjet|gemm|flash|fmha|attention|cutlass|sm90' python3 /tmp/t.py > $R/ncu-torch.txt 2>&1
grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" $R/ncu-torch.txt | sed -E 's/^  ([^ (<]{0,60}).*(\([0-9]+, [0-9]+, [0-9]+\)x\([0-9]+, [0-9]+, [0-9]+\)).*/  \1 \2/' > $R/torch-kernels.txt
cat $R/torch-kernels.txt | paste - - | awk '{print $1, $2, $NF}' | head -40
tar czf $OUT/r44.tgz -C /tmp r44
echo "total $(( $(date +%s) - t0 )) s"
