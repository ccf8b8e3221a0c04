#!/usr/bin/env bash
# GPU run 265 (thirty-ninth session): L2 cache policies in the decoder kernel: the weights stream
# as evict_first and lm_head's first items are put into L2 as evict_last (GRAPE_DECODER_L2_HINTS),
# with 4-24 lm_head items a block put there during the last layer steps (GRAPE_DECODER_LM_L2):
# traces (lm_head's step) and ncu (time, DRAM bytes) at position 128, and two decoder tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.TheDecodeForm*' > $R/run265-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run265-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
trace() { GRAPE_MONO_TRACE=$R/run265-trace-$1.txt timeout 60 $C/grape bench "${B[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1; echo "== $1: $(grep -E '^24 ' $R/run265-trace-$1.txt) | $(grep total $R/run265-trace-$1.txt)"; }
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
ncu_of() {
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram|rror" | sed "s/^/ncu $1: /"
}
GRAPE_DECODER_L2_HINTS=0 trace nohints-lm4
trace hints-lm4
GRAPE_DECODER_LM_L2=8 trace hints-lm8
GRAPE_DECODER_LM_L2=12 trace hints-lm12
GRAPE_DECODER_LM_L2=16 trace hints-lm16
GRAPE_DECODER_LM_L2=24 trace hints-lm24
GRAPE_DECODER_L2_HINTS=0 trace nohints-lm4-again
GRAPE_DECODER_L2_HINTS=0 ncu_of nohints-lm4
ncu_of hints-lm4
GRAPE_DECODER_LM_L2=12 ncu_of hints-lm12
GRAPE_DECODER_LM_L2=16 ncu_of hints-lm16
echo "total $(( $(date +%s) - t0 )) s"
