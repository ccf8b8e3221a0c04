#!/usr/bin/env bash
# GPU run 155: is decode_step's 2x in mono its symbolic batch? bench/decode/gemv.grp `layers`
# (x: f16[5, 768], the products' row count a constant) against `layers_b` (x: f16[B, 768], B = 5
# bound at run time, as decode_step's), graph and mono, with traces.
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
for e in layers layers_b; do
  $B run "${G[@]}" --entry $e --executor graph --output $D/g-$e >/dev/null
  GRAPE_DUMP_KERNELS=$R $B run "${G[@]}" --entry $e --executor mono --output $D/m-$e >/dev/null
  python3 -c "import numpy as np; print('$e mono identical to graph:', (np.load('$D/g-$e/out0.npy')==np.load('$D/m-$e/out0.npy')).all())"
done
python3 -c "import numpy as np; print('layers_b identical to layers:', (np.load('$D/g-layers/out0.npy')==np.load('$D/g-layers_b/out0.npy')).all())"
for round in 1 2; do
  for e in layers layers_b; do
    for ex in graph mono; do
      $B bench "${G[@]}" --entry $e --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/$e $ex round $round: /"
    done
  done
done
for e in layers layers_b; do
  GRAPE_MONO_TRACE=$R/trace-$e.txt $B bench "${G[@]}" --entry $e --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
  head -7 $R/trace-$e.txt; tail -1 $R/trace-$e.txt
done
ls $R | head; rm -f $R/*_k*.cu
