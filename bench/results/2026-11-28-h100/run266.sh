#!/usr/bin/env bash
# GPU run 266 (thirty-ninth session): the decoder trace with the stages' inner phases (q/k/v
# product, the exchanges, the attention, the projections): decode_step at positions 128 and 200;
# one decoder test.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 60 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.FiveRows*' > $R/run266-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run266-tests.log | head
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
trace() { GRAPE_MONO_TRACE=$R/run266-trace-$1.txt timeout 60 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/$2 --executor mono --warmup 5 --iters 20 > /dev/null 2>&1; echo "== $1"; cat $R/run266-trace-$1.txt; }
trace p128 p.npy
trace p200 p200.npy
trace p128-again p.npy
echo "total $(( $(date +%s) - t0 )) s"
