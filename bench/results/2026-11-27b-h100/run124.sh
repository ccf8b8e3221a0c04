#!/usr/bin/env bash
# GPU run 124 (the head): the graph executor takes only block sequences that hold a loop
# (GRAPE_GRAPH_SEQUENCES=all: every sequence, the same binary, as the A/B). The sequence tests;
# the overhead chain (graph default / all / sequences off, eager on / off) with its PyTorch peer;
# generate and beam_search graph default / all; decode_step graph; then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='BlockSequences.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -20
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
OVH=(bench/overhead/overhead.grp --input x=$D/x_overhead.npy --backend cuda)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda)
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
b() { echo -n "$1: "; shift; env "$@" | grep -E "latency|kernels per" | tr '\n' ' '; echo; }
for r in 1 2; do
  b "r$r overhead graph" $B/grape bench "${OVH[@]}" --executor graph --warmup 20 --iters 200
  b "r$r overhead graph all" GRAPE_GRAPH_SEQUENCES=all $B/grape bench "${OVH[@]}" --executor graph --warmup 20 --iters 200
  b "r$r overhead eager" $B/grape bench "${OVH[@]}" --executor eager --warmup 20 --iters 200
  b "r$r overhead eager seq=0" GRAPE_SEQUENCES=0 $B/grape bench "${OVH[@]}" --executor eager --warmup 20 --iters 200
  b "r$r generate graph" $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r generate graph all" GRAPE_GRAPH_SEQUENCES=all $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r beam graph" $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
  b "r$r beam graph all" GRAPE_GRAPH_SEQUENCES=all $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
done
b "decode_step graph" $B/grape bench "${DEC[@]}" --executor graph --warmup 20 --iters 200
python3 bench/overhead/peer_torch.py $D/x_overhead.npy 100 /tmp/torch_ovh.npy /tmp/torch_ovh.json > /dev/null 2>&1; python3 -c "import json; d=json.load(open('/tmp/torch_ovh.json')); print('torch overhead eager', d['eager']['median_ms'], 'graph', d['cuda_graph']['median_ms'])"
echo "bench $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 250 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run124-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
