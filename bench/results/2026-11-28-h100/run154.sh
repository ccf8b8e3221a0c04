#!/usr/bin/env bash
# GPU run 154: do a persistent kernel's steps slow down with the number of different bodies it
# cycles through (instruction fetch)? bench/decode/gemv.grp: `mlp` (2 product bodies a layer) and
# `layers` (decode_step's 4 product bodies a layer, no attention), graph against mono, with traces.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/x768.npy', (0.5*r.standard_normal((5,768))).astype(np.float16))"
G=(bench/decode/gemv.grp --random-weights 3 --input x=$D/x768.npy --backend cuda)
for e in mlp layers; do
  $B run "${G[@]}" --entry $e --executor graph --output $D/g-$e >/dev/null
  $B run "${G[@]}" --entry $e --executor mono --output $D/m-$e >/dev/null
  python3 -c "import numpy as np; print('$e mono identical to graph:', (np.load('$D/g-$e/out0.npy')==np.load('$D/m-$e/out0.npy')).all())"
done
for round in 1 2; do
  for e in mlp layers; do
    for ex in graph mono; do
      $B bench "${G[@]}" --entry $e --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency|kernels per" | sed "s/^/$e $ex round $round: /"
    done
  done
done
for e in mlp layers; do
  GRAPE_MONO_TRACE=$R/trace-$e.txt $B bench "${G[@]}" --entry $e --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
  head -10 $R/trace-$e.txt; tail -1 $R/trace-$e.txt
done
$B bench "${G[@]}" --entry layers --executor eager --warmup 5 --iters 50 --profile 2>&1 | sed -n 6,16p
