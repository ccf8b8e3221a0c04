#!/usr/bin/env bash
# GPU run 13: wgmma with lean chunk addressing, descriptor increments, staged epilogue.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; D=/tmp/in; mkdir -p $D
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*' > $OUT/mp-tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|Failure" $OUT/mp-tests.log | head -40
echo "mp $(( $(date +%s) - t0 )) s"
{
for cfg in "GRAPE_GEMM_WGMMA=0" "GRAPE_GEMM_WGMMA=1" "GRAPE_GEMM_WGMMA_STAGES=3"; do
  echo "== $cfg"; env $cfg python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "bert b16" 2>&1 | tail -3
done
} > $OUT/kernels.txt 2>&1
cat $OUT/kernels.txt
for n in bert_b16_qkvout bert_b16_ffn_down; do
  ncu --set full --import-source no --kernel-name regex:grape_kernel_wide --launch-skip 2 --launch-count 1 -o $OUT/$n \
    $B/grape bench /tmp/bk/$n.grp --backend cuda --executor eager --weights /tmp/bk/$n.safetensors --input x=/tmp/bk/${n}_x.npy --warmup 2 --iters 2 > $OUT/$n.log 2>&1
  ncu --import $OUT/$n.ncu-rep --page details > $OUT/$n.details.txt 2>&1
  ncu --import $OUT/$n.ncu-rep --page source --csv --print-source sass > $OUT/$n.sass.csv 2>&1
done
rm -f $OUT/*.ncu-rep
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
bert() { env $1 $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$2.npy --input mask=$D/mask$2.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | head -2 | tail -1; }
{
for r in 1 2; do
  echo "== wgmma=0 b=16"; bert GRAPE_GEMM_WGMMA=0 16
  echo "== wgmma=1 b=16"; bert GRAPE_GEMM_WGMMA=1 16
done
echo "== b=16 profile"; $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "_k(1|2|3|4|5|6|7|8|9|10)_|profile"
} > $OUT/bert.txt 2>&1
cat $OUT/bert.txt
echo "total $(( $(date +%s) - t0 )) s"
