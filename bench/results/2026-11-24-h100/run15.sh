#!/usr/bin/env bash
# GPU run 15: the head's kernels (wgmma stages chosen per launch). Whole suite; wgmma cases with
# 1 and 2 blocks forced; compute-sanitizer on them; kernels vs torch; BERT; bench/run.sh.
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
F='*GpuMatrixProduct*case21:*GpuMatrixProduct*case22:*GpuMatrixProduct*case23:*GpuMatrixProduct*case24'
GRAPE_GEMM_WGMMA_BLOCKS=1 $B/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $OUT/wgmma-b1.log 2>&1 &
GRAPE_GEMM_WGMMA_BLOCKS=2 $B/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $OUT/wgmma-b2.log 2>&1 &
timeout 200 compute-sanitizer --tool memcheck $B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*case21:*GpuMatrixProduct*case24' > $OUT/memcheck.log 2>&1 &
timeout 200 compute-sanitizer --tool racecheck $B/grape_gpu_tests --gtest_color=no --gtest_filter='*GpuMatrixProduct*case22' > $OUT/racecheck.log 2>&1 &
wait
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/wgmma-b*.log $OUT/memcheck.log $OUT/racecheck.log
echo "sanitize $(( $(date +%s) - t0 )) s"
python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk > $OUT/kernels.txt 2>&1; tail -17 $OUT/kernels.txt
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
bert() { env $1 $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$2.npy --input mask=$D/mask$2.npy --backend cuda --executor graph --warmup 10 --iters 300 2>&1 | head -2 | tail -1; }
{
for r in 1 2; do
  for b in 16 1; do for cfg in GRAPE_GEMM_WGMMA=0 GRAPE_GEMM_WGMMA=1; do echo "== $cfg b=$b"; bert $cfg $b; done; done
done
echo "== b=16 profile"; $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "_k(1|2|3|4|5|6|7|8|9|10)_|profile"
} > $OUT/bert.txt 2>&1
cat $OUT/bert.txt
echo "bert $(( $(date +%s) - t0 )) s"
timeout 150 bench/run.sh $PWD/$B/grape /tmp/bench2 > $OUT/bench-run.txt 2>&1; grep -E "Grape|PyTorch|per op" $OUT/bench-run.txt | head -12
echo "total $(( $(date +%s) - t0 )) s"
