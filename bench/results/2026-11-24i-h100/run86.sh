#!/usr/bin/env bash
# GPU run 86: why BERT b=16 is slower with sibling products (run 85: 1.411 -> 1.500 ms): per-kernel
# profiles (eager) with GRAPE_SIBLINGS=0 and the default; then compute-sanitizer initcheck over the
# matrix-product paths and the cluster K splits (whose products are now sibling kernels).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r86; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
for cfg in GRAPE_SIBLINGS=0 X=1; do
  echo "== profile bert b=16 eager $cfg"
  env $cfg $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 5 --iters 30 --profile > $R/prof.txt 2>&1
  head -8 $R/prof.txt; grep -E "forward_k(1|2|3|4|5|6|7|8|9)_" $R/prof.txt | head -12
  cp $R/prof.txt $OUT/profile-bert-b16-$cfg.txt
done
F='Paths/GpuMatrixProduct.*:Autotune.ClusterSplitsMatchTheCpuEagerAndInAGraph'
$B/grape_gpu_tests --gtest_filter="$F" > /dev/null 2>&1  # warm the kernel cache
timeout 300 compute-sanitizer --tool initcheck $B/grape_gpu_tests --gtest_filter="$F" > $R/initcheck.log 2>&1
echo "initcheck rc=$? $(( $(date +%s) - t0 )) s"; grep -E "ERROR SUMMARY|PASSED|FAILED" $R/initcheck.log | head -4
grep -B3 -A20 "Uninitialized" $R/initcheck.log | head -60
echo "total $(( $(date +%s) - t0 )) s"
