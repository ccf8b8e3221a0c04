#!/usr/bin/env bash
# GPU run 160: where beam_search's per-token time beyond decode_step goes, and decode_step's kernels
# with the row-count variants: `grape bench --profile` (eager, CUDA events around each launch).
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
python3 -c "import numpy as np; np.save('$D/prompt.npy', np.random.default_rng(1).integers(0, 50256, (1, 64)).astype(np.int32))"
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B bench examples/gpt2.grp "${ARGS[@]}" --executor eager --warmup 5 --iters 20 --profile > $R/profile-decode.txt 2>&1
head -40 $R/profile-decode.txt
$B bench examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/prompt.npy --backend cuda \
  --executor eager --warmup 1 --iters 2 --profile > $R/profile-beam.txt 2>&1
head -60 $R/profile-beam.txt
