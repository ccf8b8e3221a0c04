#!/usr/bin/env bash
# GPU run 275 (fortieth session): where the first pass of keys' 0.67 us before the score goes.
# grape_x1 is the final kernel (260cdbe) with five more stamps of thread 0 inside the attention
# (/tmp/exp_stamps.py, not committed), each taken after a value it depends on: the new key/value
# stores and the new key's score issued, the query in registers, the 16 values loaded, the score,
# the running maximum/sum. grape_x2 also moves the new key/value stores into the caches after the
# keys (nobody reads them this launch).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in x1 x2; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  GRAPE_MONO_TRACE=$R/run275-trace-$b.txt timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $b"; grep -E "^(0|2|4|22) |total" $R/run275-trace-$b.txt
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p128: /"
done
