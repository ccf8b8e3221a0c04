#!/usr/bin/env bash
# GPU run 115 (the head's binary): bench_kernels under ncu for the BERT shapes (products and
# attention), each beside torch.matmul / scaled_dot_product_attention in the same run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r115; mkdir -p $R $OUT
t0=$(date +%s)
timeout 500 python3 bench/kernels/bench_kernels.py $B/grape $R/k --only "bert" --ncu > $R/kernels-bert.txt 2>&1
cp $R/kernels-bert.txt $OUT/run115-kernels-bert.txt; tail -14 $R/kernels-bert.txt
echo "total $(( $(date +%s) - t0 )) s"
