#!/usr/bin/env bash
# GPU run 144 (one H100): why generate's tokens differed between the base binary (635e253) and the
# head in run 143 (each with its own kernel cache, so its own autotuning decisions). Each binary
# with GRAPE_TUNE=0 (the heuristics' launches), and the head twice with tuning on, fresh caches.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/gen_prompt.npy', np.random.default_rng(3).integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
gen() {  # tag binary [env...]
  local tag=$1 b=$2; shift 2
  env "$@" GRAPE_CACHE_DIR=$D/kc-$tag $C/$b run examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors \
    --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda --executor graph --output $D/gen-$tag >/dev/null 2>&1
  md5sum $D/gen-$tag/out0.npy | sed "s|$D/||"
}
gen base-notune grape-base GRAPE_TUNE=0
gen head-notune grape GRAPE_TUNE=0
gen base-tune1 grape-base
gen head-tune1 grape
gen head-tune2 grape
for t in base-tune1 head-tune1 head-tune2; do GRAPE_CACHE_DIR=$D/kc-$t $C/grape cache info | grep tuning; done
