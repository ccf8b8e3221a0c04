#!/usr/bin/env bash
# GPU run 27: topk with 16 elements in flight per thread (512 threads): the topk parity tests,
# the probe, bench/beam.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r27; mkdir -p $R
timeout 200 $B/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.TopK:GpuParity.Gpt2GreedyAndBeamTokens:GpuParity.Ops*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED)|Failure" $R/tests.log | head
python3 -c "import numpy as np; r = np.random.default_rng(0); np.save('/tmp/xr.npy', r.standard_normal(251285).astype(np.float32))"
$B/grape bench build-carry/topk_bench.grp --input x=/tmp/xr.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "topk" | tee $R/topk.txt
timeout 240 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$?"; grep -A8 '^| variant' $R/beam.log | head -8
tar czf $OUT/r27.tgz -C /tmp r27
