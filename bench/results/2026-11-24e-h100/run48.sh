#!/usr/bin/env bash
# GPU run 48: 128 x 96 wgmma tiles as a tuning candidate ("wgmma96", "wgmma96x2"). Autotune and
# parity tests; bench_kernels --ncu on the BERT b=16 products tuned, and with wgmma96 forced;
# BERT b=16 / b=1 forward (graph) tuned against GRAPE_TUNE=0, same run.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r48; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
timeout 300 $B/grape_gpu_tests --gtest_color=no --gtest_filter='Autotune.*:GpuParity.*:Plan/Executors.Bert*:Plan/Executors.Mlp*' > $R/gpu-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|OK \] Autotune" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only b16 --ncu > $R/kernels-tuned.txt 2>&1
cp /tmp/bk/kernels.json $R/kernels-tuned.json; cat $R/kernels-tuned.txt
GRAPE_TUNE_FORCE=wgmma96 timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk96 --only b16 --ncu > $R/kernels-w96.txt 2>&1
cp /tmp/bk96/kernels.json $R/kernels-w96.json; cat $R/kernels-w96.txt
echo "kernels $(( $(date +%s) - t0 )) s"
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-120; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
for cfg in GRAPE_TUNE=1 GRAPE_TUNE=0 GRAPE_TUNE=1 GRAPE_TUNE=0; do
  gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
done > $R/bench.txt 2>&1
cat $R/bench.txt
cp /tmp/gc/tuning/tuning.txt $R/
tar czf $OUT/r48.tgz -C /tmp r48
echo "total $(( $(date +%s) - t0 )) s"
