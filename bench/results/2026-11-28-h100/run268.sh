#!/usr/bin/env bash
# GPU run 268 (thirty-ninth session): run 267's attention with the warp's 16 values loaded before
# its keys' scores (run 267 loaded them one after another inside the weighting loop: 10.7 us of
# attention a layer at position 200). The decoder tests that cover the attention, traces, ncu, and
# grape bench at positions 128 (graph and mono) and 200 (mono).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 120 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.TheDecodeForm*' > $R/run268-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run268-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
trace() { GRAPE_MONO_TRACE=$R/run268-trace-$1.txt timeout 60 $C/grape bench "${A[@]}" --input p=$D/$2 --executor mono --warmup 5 --iters 20 > /dev/null 2>&1; echo "== $1"; grep -E "^(0|1|2|3|24) |total" $R/run268-trace-$1.txt; }
trace p128 p.npy
trace p200 p200.npy
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for P in p.npy p200.npy; do
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${A[@]}" --input p=$D/$P --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram|rror" | sed "s/^/ncu $P: /"
done
for e in graph mono; do
  timeout 60 $C/grape bench "${A[@]}" --input p=$D/p.npy --executor $e --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $e: /"
done
timeout 60 $C/grape bench "${A[@]}" --input p=$D/p200.npy --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p200 mono: /"
echo "total $(( $(date +%s) - t0 )) s"
