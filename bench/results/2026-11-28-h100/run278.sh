#!/usr/bin/env bash
# GPU run 278 (fortieth session): lm_head's items two at a time (grape_lm2: one k loop for both
# products, one pair of barriers) against one at a time (grape_lm, run 277's binary), at
# GRAPE_DECODER_LM_SKIP/LM_L2 0/4 (the default), 3/4 and 3/8. The attention and row-count tests
# on grape_lm2's kernel (8 rows: 512 outputs a pair over 256 threads).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_lm2
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.ALongCache*:DecoderPlan.TheDecodeForm*' > $R/run278-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run278-tests.log | head -30
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in lm lm2; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  timeout 60 $C/grape_$b run "${A[@]}" --executor mono --output $D/out-$b > /dev/null 2>&1; echo "run $b rc=$?"
  for cfg in 0-4 3-4 3-8; do
    export GRAPE_DECODER_LM_SKIP=${cfg%-*} GRAPE_DECODER_LM_L2=${cfg#*-}
    GRAPE_MONO_TRACE=$R/run278-trace-$b-$cfg.txt timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
    echo "== $b skip-l2 $cfg: $(grep -E '^24 ' $R/run278-trace-$b-$cfg.txt | cut -d'|' -f1) $(grep total $R/run278-trace-$b-$cfg.txt)"
    timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 4 \
      $C/grape_$b bench "${A[@]}" --executor mono --warmup 2 --iters 9 2>&1 | grep -E "duration|dram|rror" | awk '{printf "%s %s  ", $1, $3} END {print ""}' | sed "s/^/ncu $b $cfg: /"
  done
done
unset GRAPE_DECODER_LM_SKIP GRAPE_DECODER_LM_L2
for b in lm lm2 lm lm2; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
python3 - $D <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-lm/out0.npy").astype(np.float64); b = np.load(d + "/out-lm2/out0.npy").astype(np.float64)
print("lm2 vs lm logits: rel L2 %.3e, argmax equal %d/%d" % (np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
