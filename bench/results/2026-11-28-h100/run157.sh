#!/usr/bin/env bash
# GPU run 157: what the symbolic batch costs GPT-2 decode_step itself (run 155 measured it on
# bench/decode/gemv.grp). examples/gpt2.grp as it is (batch B bound by the input) against a copy with
# `const B = 5` (made here by sed), same weights and inputs: logits compared, graph and mono
# alternating.
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
sed 's/^const L = 12 /const B = 5\nconst L = 12 /' examples/gpt2.grp > $D/gpt2_b5.grp
grep -c "^const B = 5" $D/gpt2_b5.grp
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run examples/gpt2.grp "${ARGS[@]}" --executor graph --output $D/sym > /dev/null
$B run $D/gpt2_b5.grp "${ARGS[@]}" --executor graph --output $D/b5 > /dev/null
python3 -c "
import numpy as np
a=np.load('$D/sym/out0.npy').astype(np.float32); b=np.load('$D/b5/out0.npy').astype(np.float32)
print('decode_step B=5 const vs symbolic: identical', (a==b).all(), 'max abs', float(np.abs(a-b).max()), 'argmax equal', (a.argmax(-1)==b.argmax(-1)).all())"
for round in 1 2; do
  for f in examples/gpt2.grp $D/gpt2_b5.grp; do
    for ex in graph mono; do
      $B bench $f "${ARGS[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s|^|decode_step $(basename $f) $ex round $round: |"
    done
  done
done
