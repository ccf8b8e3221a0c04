#!/usr/bin/env bash
# GPU run 260 (thirty-ninth session): the attention loads its first 128 positions' values before
# the scores and two keys a thread at once; the ring's consumed count as release/acquire. The
# decoder tests that cover the attention, then ncu of decode_step at position 128 with the keys and
# values in the ring and from L2, and at 200 (from L2), and grape bench of the same.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 150 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.TheDecodeForm*:DecoderPlan.BeamDecode*' > $R/run260-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run260-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
B200=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p200.npy)
bench() { timeout 120 $C/grape bench "$@" --warmup 20 --iters 300 --executor mono 2>&1 | grep -E "latency|plan|rror"; }
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
ncu_of() {
  timeout 100 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "$@" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|rror"
}
{
  bench "${B[@]}" | sed "s/^/p128 ring: /"
  GRAPE_DECODER_KV_RING=0 bench "${B[@]}" | sed "s/^/p128 L2: /"
  bench "${B200[@]}" | sed "s/^/p200 L2: /"
  ncu_of "${B[@]}" | sed "s/^/ncu p128 ring: /"
  GRAPE_DECODER_KV_RING=0 ncu_of "${B[@]}" | sed "s/^/ncu p128 L2: /"
  ncu_of "${B200[@]}" | sed "s/^/ncu p200 L2: /"
  bench "${B[@]}" | sed "s/^/p128 ring: /"
  GRAPE_DECODER_KV_RING=0 bench "${B[@]}" | sed "s/^/p128 L2: /"
} | tee $R/run260-bench.txt
echo "total $(( $(date +%s) - t0 )) s"
