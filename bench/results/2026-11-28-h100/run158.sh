#!/usr/bin/env bash
# GPU run 158: row-count variants (matrix products compiled for the bound runtime row count,
# jit/kernel_source.h kRowsDefine). Tests (RowVariants, mono, parity); decode_step with the variants
# off (GRAPE_ROW_VARIANTS=0), on, and gpt2.grp with `const B = 5` (run 157's reference): logits
# compared, graph and mono alternating; the variants' build time from a cold cache.
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
timeout 300 $C/grape_gpu_tests --gtest_color=no --gtest_brief=1 \
  --gtest_filter='RowVariants.*:MonoExecutor.*:Plan/*:GpuParity.*:GraphExecutor.*' 2>&1 | tail -25
sed 's/^const L = 12 /const B = 5\nconst L = 12 /' examples/gpt2.grp > $D/gpt2_b5.grp
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
# Cold builds: a fresh cache each, the first call builds the variants at its bind.
for v in 0 1; do
  GRAPE_CACHE_DIR=$D/cold$v GRAPE_ROW_VARIANTS=$v $B bench examples/gpt2.grp "${ARGS[@]}" --executor graph --warmup 1 --iters 3 2>&1 | grep -E "kernel build" | sed "s/^/cold, variants $v: /"
done
GRAPE_ROW_VARIANTS=0 $B run examples/gpt2.grp "${ARGS[@]}" --executor graph --output $D/off > /dev/null
$B run examples/gpt2.grp "${ARGS[@]}" --executor graph --output $D/on > /dev/null
$B run examples/gpt2.grp "${ARGS[@]}" --executor mono --output $D/mono > /dev/null
$B run $D/gpt2_b5.grp "${ARGS[@]}" --executor graph --output $D/b5 > /dev/null
python3 -c "
import numpy as np
o=np.load('$D/off/out0.npy').astype(np.float32)
for n in ['on','mono','b5']:
  a=np.load('$D/'+n+'/out0.npy').astype(np.float32)
  print('decode_step', n, 'vs variants off: identical', (a==o).all(), 'max abs', float(np.abs(a-o).max()))"
for round in 1 2; do
  for cfg in off on b5; do
    f=examples/gpt2.grp; v=1
    [ $cfg = off ] && v=0
    [ $cfg = b5 ] && f=$D/gpt2_b5.grp
    for ex in graph mono; do
      GRAPE_ROW_VARIANTS=$v $B bench $f "${ARGS[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s|^|decode_step $cfg $ex round $round: |"
    done
  done
done
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/x768.npy', (0.5*r.standard_normal((5,768))).astype(np.float16))"
G=(bench/decode/gemv.grp --random-weights 3 --input x=$D/x768.npy --backend cuda)
for cfg in "layers 1" "layers_b 0" "layers_b 1"; do
  set -- $cfg
  GRAPE_ROW_VARIANTS=$2 $B bench "${G[@]}" --entry $1 --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/gemv $1 variants $2 graph: /"
done
GRAPE_MONO_TRACE=$R/trace-decode.txt $B bench examples/gpt2.grp "${ARGS[@]}" --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
tail -1 $R/trace-decode.txt
