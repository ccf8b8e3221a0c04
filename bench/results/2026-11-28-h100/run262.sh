#!/usr/bin/env bash
# GPU run 262 (thirty-ninth session): step 0 loads the embeddings 16 bytes at a time and before
# waiting for its item, which is no longer paced; lm_head items put into L2 during the last 4, 8,
# 12 or 16 layer steps (GRAPE_DECODER_LM_L2). Decoder tests, traces at position 128, ncu.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.TheDecodeForm*' > $R/run262-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run262-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
tr() { GRAPE_MONO_TRACE=$R/run262-trace-$1.txt timeout 100 $C/grape bench "${B[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1; echo "== $1"; grep -E "^(0|1|2|3|24) |total" $R/run262-trace-$1.txt; }
tr lm4
GRAPE_DECODER_LM_L2=8 tr lm8
GRAPE_DECODER_LM_L2=12 tr lm12
GRAPE_DECODER_LM_L2=16 tr lm16
tr lm4-again
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
ncu_of() {
  timeout 100 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram|rror"
}
bench() { timeout 120 $C/grape bench "${B[@]}" --warmup 20 --iters 300 --executor mono 2>&1 | grep -E "latency|plan|rror"; }
{
  ncu_of | sed "s/^/ncu lm4: /"
  GRAPE_DECODER_LM_L2=12 ncu_of | sed "s/^/ncu lm12: /"
  bench | sed "s/^/bench lm4: /"
  GRAPE_DECODER_LM_L2=12 bench | sed "s/^/bench lm12: /"
} | tee $R/run262-bench.txt
echo "total $(( $(date +%s) - t0 )) s"
