#!/usr/bin/env bash
cd "$(dirname "$0")/.."
export GRAPE_CACHE_DIR=/tmp/gc
python3 -c "
import numpy as np
r = np.random.default_rng(0)
np.save('/tmp/xr.npy', r.standard_normal(251285).astype(np.float32))
np.save('/tmp/xt.npy', (r.integers(0, 1000, 251285) / 100.0 - 10.8).astype(np.float16).astype(np.float32))
"
for x in xr xt; do
  build-carry/grape bench bench/results/2026-11-24b-h100/topk_bench.grp --input x=/tmp/$x.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E 'topk|latency'
done
GRAPE_DUMP_KERNELS=/tmp/dk mkdir -p /tmp/dk; GRAPE_CACHE_DIR=/tmp/gc2 GRAPE_DUMP_KERNELS=/tmp/dk build-carry/grape run bench/results/2026-11-24b-h100/topk_bench.grp --input x=/tmp/xr.npy --backend cuda > /dev/null
cp /tmp/dk/*topk* $OUT/ 2>/dev/null; ls $OUT
