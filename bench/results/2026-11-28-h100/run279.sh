#!/usr/bin/env bash
# GPU run 279 (fortieth session): lm_head is bound neither by its items' serial latency (run 278:
# two at a time, no gain) nor helped by L2 prefetches spread over the last layers (evicted: DRAM
# read 284 against 258 MB). grape_lm3 adds GRAPE_DECODER_LM_BURST=1: at its first lm_head item a
# block puts all its later ones (past LM_SKIP) into L2 at once, so DRAM sees all of lm_head's
# requests while the last layer runs. Configurations skip/l2/burst: 0/4/0 (default), 3/0/1,
# 3/4/1, 2/0/1, 4/0/1, 0/4/0 again.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc GRAPE_COMPILE_WORKER=$C/grape_lm3
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 60 $C/grape_lm3 run "${A[@]}" --executor mono --output $D/out-base > /dev/null 2>&1; echo "run rc=$?"
for cfg in 0-4-0 3-0-1 3-4-1 2-0-1 4-0-1 0-4-0; do
  IFS=- read -r k l b <<< "$cfg"
  export GRAPE_DECODER_LM_SKIP=$k GRAPE_DECODER_LM_L2=$l GRAPE_DECODER_LM_BURST=$b
  GRAPE_MONO_TRACE=$R/run279-trace-$cfg.txt timeout 60 $C/grape_lm3 bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $cfg: $(grep -E '^24 ' $R/run279-trace-$cfg.txt | cut -d'|' -f1) $(grep total $R/run279-trace-$cfg.txt)"
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 4 \
    $C/grape_lm3 bench "${A[@]}" --executor mono --warmup 2 --iters 9 2>&1 | grep -E "duration|dram|rror" | awk '{printf "%s %s  ", $1, $3} END {print ""}' | sed "s/^/ncu $cfg: /"
  timeout 60 $C/grape_lm3 run "${A[@]}" --executor mono --output $D/out-$cfg > /dev/null 2>&1
done
python3 - $D <<'PY'
import sys, glob, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-base/out0.npy").astype(np.float64)
for f in sorted(glob.glob(d + "/out-*-*/out0.npy")):
    b = np.load(f).astype(np.float64)
    print("%s vs base: rel L2 %.3e, argmax equal %d/%d" % (f.split("/")[-2], np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
