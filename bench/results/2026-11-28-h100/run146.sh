#!/usr/bin/env bash
# GPU run 146 (one H100): the mono executor (one persistent kernel per entry, jit/persistent_source.h).
# (1) its GPU tests against the CPU reference; (2) GPT-2 small decode_step at its real size: mono's
# logits against graph's, then graph and mono alternating (grape bench); (3) the persistent kernel
# under ncu (the issue's measure: the sum of the step's kernel times) with 2 and 1 blocks per SM.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
timeout 300 $C/grape_gpu_tests --gtest_filter='MonoExecutor.*' > $R/mono-tests.log 2>&1; echo "tests rc=$?"
grep -E "^\[  |mono:|Failure|error" $R/mono-tests.log | head -40
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
timeout 200 $B run "${DEC[@]}" --executor mono --output $D/om 2>&1 | tail -3
python3 -c "
import numpy as np
a=np.load('$D/og/out0.npy').astype(np.float32); b=np.load('$D/om/out0.npy').astype(np.float32)
print('decode_step mono vs graph: max abs', float(np.abs(a-b).max()), 'rel L2', float(np.linalg.norm(a-b)/np.linalg.norm(a)), 'argmax equal', (a.argmax(-1)==b.argmax(-1)).all())"
for round in 1 2; do
  for ex in graph mono; do
    $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency|kernels" | sed "s/^/decode_step $ex round $round: /"
  done
done
GRAPE_MONO_BLOCKS_PER_SM=1 $B bench "${DEC[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step mono 1 block\/SM: /"
ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers -k grape_persistent -c 1 $B run "${DEC[@]}" --executor mono --output $D/om2 2>&1 | grep -E "duration|grid_size|registers|occupancy" | head
