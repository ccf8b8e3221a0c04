#!/usr/bin/env bash
# GPU run 273 (fortieth session): where the rows' 0.86 us and the one pass of keys' 1.0 us go.
# grape_exp is run 271's grape_opt2 with seven more stamps of thread 0 (kept in git stash, not
# committed), each taken after a value it depends on: in stage_rows after the lane's local sums
# (the rows' loads and the scale/shift consumed), after the warp reductions, after the stores of
# the normalised rows, after the reductions into the sum; in the first pass of keys after the
# score, after the running maximum/sum update, after the weighted values.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc GRAPE_COMPILE_WORKER=$C/grape_exp
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
for P in p128:p.npy p200:p200.npy; do
  GRAPE_MONO_TRACE=$R/run273-trace-${P%%:*}.txt timeout 60 $C/grape_exp bench "${A[@]}" --input p=$D/${P#*:} --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== ${P%%:*}"; grep -E "^(0|1|2|3|4|5|24) |total" $R/run273-trace-${P%%:*}.txt
done
