#!/usr/bin/env bash
# GPU run 94: attention_mma.cuh in one pass (online softmax) against the two-pass kernel
# (build-carry/grape-base, 2144291). The whole GPU suite with the new kernel; ncu duration of
# BERT's attention kernel at batch 16 and 1, both binaries; BERT b=1 / b=16 graph latency and
# hidden states against PyTorch (bench/bert), both binaries, alternating, two rounds.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r94; D=/tmp/bert; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GRAPE_CACHE_DIR=/tmp/gc94 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
python3 bench/bert/make_inputs.py $D
for b in 1 16; do
  python3 bench/bert/peer_torch.py $D/bert.safetensors $D/ids$b.npy $D/mask$b.npy $R/torch$b.npy $R/torch$b.json > /dev/null 2>&1
done
for g in grape-base grape; do
  for b in 16 1; do
    A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda)
    GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g run "${A[@]}" --executor graph --output $R/$g$b > /dev/null
    python3 -c "
import numpy as np; a=np.load('$R/torch$b.npy').astype(np.float64); g=np.load('$R/$g$b/out0.npy').astype(np.float64)
print('$g b=$b hidden states rel. L2 vs PyTorch %.2e' % (np.linalg.norm(a-g)/np.linalg.norm(a)))"
    GRAPE_CACHE_DIR=/tmp/gc-$g timeout 120 ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --csv --launch-skip $((85*3+2)) --launch-count 1 \
      $B/$g bench "${A[@]}" --executor eager --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
    echo "ncu attention $g b=$b: $(python3 bench/ncu_kernels.py $R/ncu.csv)"
  done
done
for r in 1 2; do for g in grape-base grape; do for b in 1 16; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor graph)
  echo "== $g b=$b $(GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${A[@]}" --warmup 10 --iters 200 2>&1 | grep latency)"
done; done; done
echo "total $(( $(date +%s) - t0 )) s"
