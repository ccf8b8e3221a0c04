#!/usr/bin/env bash
# GPU run 85: sibling products (q, k and v in one kernel). The whole GPU suite; then BERT b=1 /
# b=16 forward and decode_step (graph) with GRAPE_SIBLINGS=0 (one kernel per product) and the
# default, alternating, two rounds; a per-kernel profile of BERT b=1 (eager).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r85; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
grep -E "^\[  FAILED|Failure|SiblingProducts" $R/gpu-tests.log > $OUT/gpu-tests-summary.txt
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-110; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for cfg in GRAPE_SIBLINGS=0 X=1; do
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
echo "== profile bert b=1 eager"
$B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --warmup 5 --iters 50 --profile 2>&1 | head -40 | tee $OUT/profile-bert-b1.txt
echo "total $(( $(date +%s) - t0 )) s"
