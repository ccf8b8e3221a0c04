#!/usr/bin/env bash
# GPU run 11 (ninth session): wgmma wide tiles. Matrix-product parity; kernels vs torch with
# wgmma on/off and stage counts; BERT b=1/16 graph on/off; then the whole suite.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; D=/tmp/in; mkdir -p $D
t0=$(date +%s)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
$B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*' > $OUT/mp-tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|rel|Failure" $OUT/mp-tests.log | head -40
echo "mp $(( $(date +%s) - t0 )) s"
{
for cfg in "GRAPE_GEMM_WGMMA=0" "GRAPE_GEMM_WGMMA=1" "GRAPE_GEMM_WGMMA_STAGES=3" "GRAPE_GEMM_WGMMA_STAGES=5"; do
  echo "== $cfg"; env $cfg python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only b16 2>&1 | tail -4
done
echo "== mlp (wgmma on)"; python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only mlp 2>&1 | tail -3
} > $OUT/kernels.txt 2>&1
echo "kernels $(( $(date +%s) - t0 )) s"
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
bert() { env $1 $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$2.npy --input mask=$D/mask$2.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | head -2 | tail -1; }
{
for r in 1 2; do
for b in 16 1; do
  echo "== wgmma=0 b=$b"; bert GRAPE_GEMM_WGMMA=0 $b
  echo "== wgmma=1 b=$b"; bert GRAPE_GEMM_WGMMA=1 $b
done; done
echo "== b=16 profile"; $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "_k(1|2|3|4|5|6|7|8|9|10)_|profile"
} > $OUT/bert.txt 2>&1
echo "bert $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > $OUT/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $OUT/gpu-tests.log
