#!/usr/bin/env bash
# GPU run 171: run 170 found generate's tokens different with GRAPE_SIBLING_UPDATES=1. Is generate
# deterministic at all? The same binary, each configuration run twice (separate processes), graph
# and eager, and with programmatic dependent launch off; every output against the first.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
export GRAPE_COMPILE_WORKER=$C/grape
GEN=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
PRE=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry prefill --input ids=$D/gen_prompt.npy)
run() {  # name executor env...
  local name=$1 x=$2; shift 2
  env "$@" $C/grape run "${GEN[@]}" --executor $x --output $D/g-$name > /dev/null 2>&1 || echo "$name failed"
  env "$@" $C/grape run "${PRE[@]}" --executor $x --output $D/p-$name > /dev/null 2>&1 || echo "$name prefill failed"
}
for m in 0 1; do
  for x in graph eager; do
    run s$m-$x-a $x GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m
    run s$m-$x-b $x GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m
  done
  run s$m-graph-nopdl graph GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kcn$m GRAPE_GEMV_PDL=0
  run s$m-graph-noseq graph GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m GRAPE_SEQUENCES=0
done
python3 - $D <<'PY'
import numpy as np, sys, glob, os
D = sys.argv[1]
for kind in ("g", "p"):
    ref = None
    for d in sorted(glob.glob(f"{D}/{kind}-*")):
        f = f"{d}/out0.npy"
        if not os.path.exists(f):
            print(kind, os.path.basename(d), "missing"); continue
        a = np.load(f)
        if ref is None:
            ref, rn = a, os.path.basename(d)
        if kind == "g":
            diff = np.argwhere(a != ref)
            print(f"{os.path.basename(d):20s} vs {rn}: {len(diff)} tokens differ" + (f", first at {diff[0].tolist()}" if len(diff) else ""))
        else:
            print(f"{os.path.basename(d):20s} vs {rn}: max abs diff {np.abs(a.astype(np.float32) - ref.astype(np.float32)).max()}, identical {(a == ref).all()}")
PY
