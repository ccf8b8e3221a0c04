#!/usr/bin/env bash
# GPU run 53 (attention_mma keeps the scores in shared memory; full-tile fast path): the whole GPU suite;
# bench_kernels --ncu on the attention shapes; BERT b=1/b=16 forward (graph).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r53; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only attention --ncu > $R/kernels-attention.txt 2>&1
cat $R/kernels-attention.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { echo "== $*" | cut -c1-120; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
python3 -c "
import numpy as np; r=np.random.default_rng(1)
for n in 'qkv': np.save(f'$D/{n}.npy', r.standard_normal((1,12,128,64)).astype(np.float16))"
A=(bench $B/attn_b1.grp --backend cuda --executor eager --input q=$D/q.npy --input k=$D/k.npy --input v=$D/v.npy)
ncu --set full --import-source no --kernel-name regex:grape --launch-skip 3 --launch-count 1 -o $R/attn $B/grape "${A[@]}" --warmup 2 --iters 2 > $R/ncu.log 2>&1
ncu --import $R/attn.ncu-rep --page details > $R/details.txt 2>&1
grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occ|Elapsed Cycles|Executed Ipc|Issue Slots|No Eligible|Warp Cycles Per Issued|Executed Instructions  |Dynamic Shared|Local Memory" $R/details.txt | head -30
rm -f $R/*.ncu-rep
tar czf $OUT/r53.tgz -C /tmp r53
echo "total $(( $(date +%s) - t0 )) s"
