#!/usr/bin/env bash
# GPU run 277 (fortieth session): which lm_head items to put into L2 during the last layers.
# Each block's first lm_head items go into its ring before lm_head's step anyway (3 of its 12-13
# fit: 192 KB, 48 KB a tile); putting those into L2 (the default: the first 4, during the last 4
# steps) only speeds up a fill that happens anyway. grape_lm (260cdbe + GRAPE_DECODER_LM_SKIP=N:
# the L2 prefetches start after the block's first N items), at skip/count 0/4 (today's), 3/4, 3/6,
# 2/6, 3/8, 0/8: the trace's lm_head step and ncu's kernel time and DRAM read.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc GRAPE_COMPILE_WORKER=$C/grape_lm
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 60 $C/grape_lm run "${A[@]}" --executor mono > /dev/null 2>&1; echo "warm rc=$?"
for cfg in 0/4 3/4 3/6 2/6 3/8 0/8 0/4; do
  export GRAPE_DECODER_LM_SKIP=${cfg%/*} GRAPE_DECODER_LM_L2=${cfg#*/}
  GRAPE_MONO_TRACE=$R/run277-trace-${cfg/\//-}.txt timeout 60 $C/grape_lm bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== skip/l2 $cfg: $(grep -E '^24 ' $R/run277-trace-${cfg/\//-}.txt | cut -d'|' -f1) $(grep total $R/run277-trace-${cfg/\//-}.txt)"
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 4 \
    $C/grape_lm bench "${A[@]}" --executor mono --warmup 2 --iters 9 2>&1 | grep -E "duration|dram|rror" | awk '{printf "%s %s  ", $1, $3} END {print ""}' | sed "s/^/ncu $cfg: /"
done
