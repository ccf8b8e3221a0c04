#!/usr/bin/env bash
# GPU run 100: the whole GPU suite at 22e590f (attention stores through the merge of the heads;
# attention_mma.cuh issues every score's loads together), then against build-carry/grape-base
# (173c983): BERT b=1 / b=16 and decode_step (graph), alternating, two rounds; ncu kernel durations
# of BERT's first layer at b=1 and b=16 for both; the PyTorch BERT peer in the same run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r100; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc100-$i timeout 330 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
python3 bench/decode/make_inputs.py $D > /dev/null
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-90; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for g in grape-base grape; do
  gb $g examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $g examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
for b in 1 16; do
  W=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor graph)
  GRAPE_CACHE_DIR=/tmp/gc-grape $B/grape run "${W[@]}" --output $R/grape$b > /dev/null
  python3 bench/bert/peer_torch.py $D/bert.safetensors $D/ids$b.npy $D/mask$b.npy $R/torch$b.npy $OUT/torch_bert_b$b.json | tail -3
  python3 -c "
import numpy as np; a=np.load('$R/torch$b.npy').astype(np.float64); g=np.load('$R/grape$b/out0.npy').astype(np.float64)
print('b=$b hidden states rel. L2 vs PyTorch %.2e, max abs %.3f' % (np.linalg.norm(a-g)/np.linalg.norm(a), np.abs(a-g).max()))"
done
for b in 1 16; do for g in grape-base grape; do
  n=85; [ $g = grape-base ] && n=8
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count $n $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=$b $g"; python3 bench/ncu_sum.py bert-b$b $R/ncu.csv | cut -c1-100; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done; done
echo "total $(( $(date +%s) - t0 )) s"
