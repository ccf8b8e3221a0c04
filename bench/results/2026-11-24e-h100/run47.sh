#!/usr/bin/env bash
# GPU run 47: bench_kernels --ncu (per-kernel device time of both sides under Nsight Compute,
# bench/kernels/ncu_time.py) on the BERT b=16 products, the attention shapes and decode products.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r47; mkdir -p $R
t0=$(date +%s)
for o in b16 attention "decode c"; do
  timeout 200 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only "$o" --ncu >> $R/kernels-ncu.txt 2>&1
  cp /tmp/bk/kernels.json "$R/kernels-${o// /_}.json" 2>/dev/null
  echo "$o $(( $(date +%s) - t0 )) s"
done
cat $R/kernels-ncu.txt
tar czf $OUT/r47.tgz -C /tmp r47
echo "total $(( $(date +%s) - t0 )) s"
