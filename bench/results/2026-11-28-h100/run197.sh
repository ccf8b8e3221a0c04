#!/usr/bin/env bash
# GPU run 197 (thirty-first session): gemv_mma.cuh's K ranges in multiples of 32, at least 64
# (GRAPE_GEMV_MMA_SHORT=1, the default: GPT-2's attn c_proj 6 -> 8 splits, c_fc 4 -> 5) against
# gemv.cuh's units (=0), and the FMA loop (GRAPE_GEMV_MMA=0): decode_step graph, three rounds
# alternating; beam_search and generate once each; outputs compared.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
V=("GRAPE_GEMV_MMA=0" "GRAPE_GEMV_MMA_SHORT=0" "GRAPE_GEMV_MMA_SHORT=1")
for i in 0 1 2; do
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec$i > /dev/null
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam$i > /dev/null
done
python3 -c "
import numpy as np
a = np.load('$D/dec0/out0.npy').astype(np.float64); t = np.load('$D/beam0/out0.npy')
for i in (1, 2):
  b = np.load('$D/dec%d/out0.npy' % i); u = np.load('$D/beam%d/out0.npy' % i)
  print('variant', i, 'decode max|d| to FMA', float(np.abs(a - b).max()), 'argmax equal', (a.argmax(-1) == b.argmax(-1)).all(), 'beam tokens equal', int((t == u).sum()), 'of', t.size)"
for round in 1 2 3; do
  for i in 0 1 2; do
    env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step ${V[$i]} round $round: /"
  done
done
for i in 0 1 2; do
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search ${V[$i]}: /"
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate ${V[$i]}: /"
done
echo "total $(( $(date +%s) - t0 )) s"
