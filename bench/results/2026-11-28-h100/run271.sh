#!/usr/bin/env bash
# GPU run 271 (fortieth session): three kernels in one run, each traced (13 stamps), under ncu and
# grape bench: grape_base (run 268's kernel), grape_opt (run 270's: the combine without a branch a
# warp, the score in four chains, the layer norm's statistics in one pass about a shift) and
# grape_opt2 (grape_opt plus: each item's step and index read an item ahead and the epsilon before
# the step's wait, instead of a global load between the rows and their statistics; the key loop
# instantiated for the ring, so its loads are ld.shared, with the query in registers; no IEEE
# divisions). The attention tests on grape_opt2's kernel.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt2
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.ALongCache*:DecoderPlan.TheDecodeForm*' > $R/run271-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run271-tests.log | head -30
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in base opt opt2; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  for P in p128:p.npy p200:p200.npy; do
    GRAPE_MONO_TRACE=$R/run271-trace-$b-${P%%:*}.txt timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/${P#*:} --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
    echo "== $b ${P%%:*}"; grep -E "^(0|1|2|3|24) |total" $R/run271-trace-$b-${P%%:*}.txt
  done
  timeout 60 $C/grape_$b run "${A[@]}" --input p=$D/p.npy --executor mono --output $D/out-$b > /dev/null 2>&1; echo "run $b rc=$?"
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p128: /"
done
for b in base opt opt2 base opt opt2; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
python3 - $D <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-base/out0.npy").astype(np.float64)
for n in ("opt", "opt2"):
    b = np.load(d + "/out-" + n + "/out0.npy").astype(np.float64)
    print("%s vs base logits: rel L2 %.3e, argmax equal %d/%d" % (n, np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
