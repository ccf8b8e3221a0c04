#!/usr/bin/env bash
# GPU run 276 (fortieth session): grape_opt4 (260cdbe's kernel) vs grape_opt5 (its key loop's
# ring loads by 32-bit shared address, a whole pass's 16 value rows at constant offsets from the
# first: run 275 measured 0.32 us for the 16 value loads with the generic pointers' 64-bit
# arithmetic). The attention tests on grape_opt5's kernel; traces, ncu, grape bench of both.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt5
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.ALongCache*:DecoderPlan.TheDecodeForm*' > $R/run276-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run276-tests.log | head -30
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in opt4 opt5; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  for P in p128:p.npy p200:p200.npy; do
    GRAPE_MONO_TRACE=$R/run276-trace-$b-${P%%:*}.txt timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/${P#*:} --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
    echo "== $b ${P%%:*}"; grep -E "^(0|2|3|24) |total" $R/run276-trace-$b-${P%%:*}.txt
  done
  timeout 60 $C/grape_$b run "${A[@]}" --input p=$D/p.npy --executor mono --output $D/out-$b > /dev/null 2>&1; echo "run $b rc=$?"
  for P in p.npy p200.npy; do
    timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
      $C/grape_$b bench "${A[@]}" --input p=$D/$P --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b $P: /"
  done
done
for b in opt4 opt5 opt4 opt5; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
python3 - $D <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-opt4/out0.npy").astype(np.float64); b = np.load(d + "/out-opt5/out0.npy").astype(np.float64)
print("opt5 vs opt4 logits: rel L2 %.3e, argmax equal %d/%d" % (np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
