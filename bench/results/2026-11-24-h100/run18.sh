#!/usr/bin/env bash
# GPU run 18: 128 x 64 wgmma tiles for products too small for 128 x 128 (BERT b=1).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; D=/tmp/in; mkdir -p $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > $OUT/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $OUT/gpu-tests.log
grep -E "^\[  (PASSED|FAILED)|^\[       OK|^\[  FAILED" $OUT/gpu-tests.log > $OUT/tests-summary.txt
timeout 120 compute-sanitizer --tool memcheck $B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*case25:*GpuMatrixProduct*case27' > $OUT/memcheck.log 2>&1
grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.log
{
for cfg in GRAPE_GEMM_WGMMA64=0 GRAPE_GEMM_WGMMA64=1; do
  echo "== $cfg"; env $cfg python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "b1 " 2>&1 | tail -3
  env $cfg python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "mlp fc2" 2>&1 | tail -1
done
} > $OUT/kernels.txt 2>&1
cat $OUT/kernels.txt
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
bert() { env $1 $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$2.npy --input mask=$D/mask$2.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | head -2 | tail -1; }
{
for r in 1 2; do
  for cfg in GRAPE_GEMM_WGMMA64=0 GRAPE_GEMM_WGMMA64=1; do echo "== $cfg b=1"; bert $cfg 1; done
done
echo "== b=16"; bert GRAPE_GEMM_WGMMA64=1 16
echo "== b=1 profile"; $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "_k(1|2|3|4|5|6|7|8|9|10)_|profile"
} > $OUT/bert.txt 2>&1
cat $OUT/bert.txt
echo "total $(( $(date +%s) - t0 )) s"
