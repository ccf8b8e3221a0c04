#!/usr/bin/env bash
# GPU run 16: the head (two blocks per SM only for many tiles of long K). Matrix-product parity;
# kernels vs torch; BERT b=16 and b=1, wgmma off/on, same run.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; D=/tmp/in; mkdir -p $D
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*' > $OUT/mp-tests.log 2>&1 &
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
wait
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $OUT/mp-tests.log
python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only b16 > $OUT/kernels.txt 2>&1
python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only mlp >> $OUT/kernels.txt 2>&1
cat $OUT/kernels.txt | grep -v "^shape" 
bert() { env $1 $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$2.npy --input mask=$D/mask$2.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | head -2 | tail -1; }
{
for r in 1 2 3; do
  for cfg in GRAPE_GEMM_WGMMA=0 GRAPE_GEMM_WGMMA=1; do echo "== $cfg b=16"; bert $cfg 16; done
done
echo "== b=1"; bert GRAPE_GEMM_WGMMA=1 1
echo "== b=16 profile"; $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "_k(1|2|3|4|5|6|7|8|9|10)_|profile"
} > $OUT/bert.txt 2>&1
cat $OUT/bert.txt
echo "total $(( $(date +%s) - t0 )) s"
