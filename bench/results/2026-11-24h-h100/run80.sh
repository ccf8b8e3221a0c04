#!/usr/bin/env bash
# GPU run 80: does the prefetch call at every kernel's start cost the op-boundary overhead?
# GRAPE_PREFETCH=0 now leaves it out of the kernel source: overhead chain (graph) and decode_step
# (graph), alternating, three rounds.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; D=/tmp/in; mkdir -p $D
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-100; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2 3; do for cfg in X=1 GRAPE_PREFETCH=0; do
  gb $cfg bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 1000
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
done; done
