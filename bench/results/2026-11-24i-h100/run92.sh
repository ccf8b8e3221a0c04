#!/usr/bin/env bash
# GPU run 92 (the head): the whole GPU suite; BERT-base forward b=1 and b=16 on seeded weights
# (bench/bert/make_inputs.py) beside its PyTorch peer in the same run: hidden states compared,
# Grape graph executor with sibling products off / on, two rounds; PyTorch eager, graph, graph+SDPA.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc92
B=build-carry; R=/tmp/r92; D=/tmp/bert; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 330 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
python3 bench/bert/make_inputs.py $D
for b in 1 16; do
  W=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor graph)
  $B/grape run "${W[@]}" --output $R/grape$b > /dev/null
  python3 bench/bert/peer_torch.py $D/bert.safetensors $D/ids$b.npy $D/mask$b.npy $R/torch$b.npy $OUT/torch_bert_b$b.json
  python3 -c "
import numpy as np; a=np.load('$R/torch$b.npy').astype(np.float64); g=np.load('$R/grape$b/out0.npy').astype(np.float64)
print('b=$b hidden states rel. L2 vs PyTorch %.2e, max abs %.3f' % (np.linalg.norm(a-g)/np.linalg.norm(a), np.abs(a-g).max()))"
  for r in 1 2; do for cfg in GRAPE_SIBLINGS=0 X=1; do
    echo "== b=$b $cfg"; env $cfg $B/grape bench "${W[@]}" --warmup 10 --iters 200 2>&1 | grep -E "latency|kernels per call" | head -2
  done; done
done
echo "total $(( $(date +%s) - t0 )) s"
