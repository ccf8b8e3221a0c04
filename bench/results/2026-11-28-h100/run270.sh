#!/usr/bin/env bash
# GPU run 270 (fortieth session): the trace with 13 stamps (the item wait split from the rows'
# load issue; the attention split into keys / meeting / combining), on two kernels in the same
# run: grape_base (run 268's kernel) and grape_opt (the attention's combine without a branch a
# warp, the score's dot product in four chains, the layer norm's statistics in one pass about a
# shift). The attention tests on grape_opt's kernel; traces, ncu and grape bench of both.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.ALongCache*' > $R/run270-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run270-tests.log | head -30
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in base opt; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  for P in p128:p.npy p200:p200.npy; do
    GRAPE_MONO_TRACE=$R/run270-trace-$b-${P%%:*}.txt timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/${P#*:} --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
    echo "== $b ${P%%:*}"; grep -E "^(0|1|2|3|24) |total" $R/run270-trace-$b-${P%%:*}.txt
  done
  timeout 60 $C/grape_$b run "${A[@]}" --input p=$D/p.npy --executor mono --output $D/out-$b > /dev/null 2>&1; echo "run $b rc=$?"
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p128: /"
done
for b in base opt base opt; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
python3 - $D <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-base/out0.npy").astype(np.float64); b = np.load(d + "/out-opt/out0.npy").astype(np.float64)
print("opt vs base logits: rel L2 %.3e, argmax equal %d/%d" % (np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
