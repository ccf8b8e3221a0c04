#!/usr/bin/env bash
# GPU run 43: autotuning (runtime/cuda/autotune.h) and the row/reduction/scan/slice-update
# templates. The whole GPU suite (with the new Autotune.* tests); bench_kernels tuned and with
# GRAPE_TUNE=0; BERT b=1/b=16 and decode_step (graph) tuned and not, same run; Nsight Compute
# (--clock-control none) on the BERT b=16 products beside torch.matmul's kernels.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r43; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-140; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for cfg in GRAPE_TUNE=1 GRAPE_TUNE=0 GRAPE_TUNE=1 GRAPE_TUNE=0; do
  gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 300
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
echo "bench $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk > $R/kernels-tuned.txt 2>&1
cat $R/kernels-tuned.txt | cut -c1-110
echo "kernels $(( $(date +%s) - t0 )) s"
GRAPE_TUNE=0 timeout 120 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk0 --only bert > $R/kernels-untuned.txt 2>&1
cat $R/kernels-untuned.txt | cut -c1-110
cp /tmp/gc/tuning/tuning.txt $R/ 2>/dev/null
echo "kernels0 $(( $(date +%s) - t0 )) s"
for n in bert_b16_qkvout bert_b16_ffn_up bert_b16_ffn_down; do
  ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum --kernel-name regex:grape --launch-skip 3 --launch-count 1 \
    $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager --weights /tmp/bk/$n.safetensors --input x=/tmp/bk/${n}_x.npy --warmup 2 --iters 2 > $R/ncu-$n.txt 2>&1
  echo "$n: $(grep -E 'gpu__time_duration|Block Size|Grid Size|grape_' $R/ncu-$n.txt | tr -s ' ' | head -3 | tr '\n' ' ')"
done
cat > /tmp/t.py <<'PY'
import torch
for M, K, N in ((2048, 768, 768), (2048, 768, 3072), (2048, 3072, 768)):
    x = torch.randn(M, K, device="cuda", dtype=torch.float16); w = torch.randn(N, K, device="cuda", dtype=torch.float16)
    for _ in range(4): torch.nn.functional.linear(x, w)
torch.cuda.synchronize()
PY
ncu --clock-control none --cache-control none --metrics gpu__time_duration.sum python3 /tmp/t.py > $R/ncu-torch.txt 2>&1
grep -E "^  [a-zA-Z_].*\(|gpu__time_duration" $R/ncu-torch.txt | head -30
tar czf $OUT/r43.tgz -C /tmp r43
echo "total $(( $(date +%s) - t0 )) s"
