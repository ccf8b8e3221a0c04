#!/usr/bin/env bash
# GPU run 163: the tensor-core GEMV (lm_head) with A staged whole, 4 W stages, 3 blocks per SM
# (build-carry/grape) against A fetched K step by K step at 6 stages (build-carry/grape-prev, 95392fa):
# GPU tests of every matrix-product path (new tensor-core GEMV cases: a K split, 16 rows over [K][N]),
# decode_step graph alternating, logits compared, lm_head under ncu, and bench/beam with its peer.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$C/grape
timeout 240 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.Gpt2*:GpuParity.SiblingProductsEveryPath' > $R/tests.log 2>&1
echo "tests rc $?"; grep -E "^\[ *(FAILED|PASSED)|Failure|error" $R/tests.log | head -20
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
for b in grape-prev grape; do
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/kc-$b $C/$b run examples/gpt2.grp "${ARGS[@]}" --executor graph --output $D/$b > /dev/null
done
python3 -c "
import numpy as np
a=np.load('$D/grape-prev/out0.npy').astype(np.float32); b=np.load('$D/grape/out0.npy').astype(np.float32)
print('decode_step head vs prev: identical', (a==b).all(), 'max abs', float(np.abs(a-b).max()))"
for round in 1 2 3; do
  for b in grape-prev grape; do
    GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/kc-$b $C/$b bench examples/gpt2.grp "${ARGS[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s|^|decode_step $b round $round: |"
  done
done
for b in grape-prev grape; do
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/kc-$b GRAPE_TUNE=0 ncu --launch-skip 86 --launch-count 1 --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size,launch__occupancy_limit_shared_mem,launch__registers_per_thread \
    $C/$b run examples/gpt2.grp "${ARGS[@]}" --executor eager --output $D/ncu-$b 2>&1 | grep -E "gpu__time|dram__bytes|grid_size|occupancy_limit|registers" | sed "s|^|ncu lm_head $b: |"
done
timeout 240 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -12
