#!/usr/bin/env bash
# GPU run 261 (thirty-ninth session): where a decoder-plan step's time goes. GRAPE_MONO_TRACE now
# stamps every block's items (start, counter seen, item in the ring, rows staged, done) and writes
# one line a step; decode_step at position 128 (pace 250 and unpaced) and 200. Also the decoder
# tests that cover the kernel after the ring's consumed count became release/acquire.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.TheDecodeForm*' > $R/run261-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run261-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
B200=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p200.npy)
tr() { GRAPE_MONO_TRACE=$R/run261-trace-$1.txt timeout 100 $C/grape bench "${@:2}" --executor mono --warmup 5 --iters 20 2>&1 | grep -E "latency|plan|rror"; echo "== $1"; cat $R/run261-trace-$1.txt; }
tr p128 "${B[@]}"
GRAPE_DECODER_PACE=0 tr p128-unpaced "${B[@]}"
tr p200 "${B200[@]}"
tr p128-again "${B[@]}"
echo "total $(( $(date +%s) - t0 )) s"
