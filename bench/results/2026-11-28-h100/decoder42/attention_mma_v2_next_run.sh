#!/usr/bin/env bash
# NOT RUN (the session's device time was spent): the run prepared for attention_mma_v2_not_run.patch
# (it applies to 037543e and changes only jit/kernels/decoder_step.cuh; the test it needs,
# CachesFullOfDistinctKeys, is in main)
# (apply it, build grape and grape_gpu_tests into build-carry/, 98584e2's grape as
# build-carry/grape_prev). Its outputs would be run295-*.
# GPU run 295 (forty-second session): run 294's tensor-core attention with (a) no proxy fence after
# the rotation (it waited for the previous step's reductions: A steps' wake 1.12 against 0.86-0.93
# us) and (b) no scalar loop over the ring (the tensor cores take every ring position; the scalar
# loop only the L2 path), so less code: run 294's binary with the tensor cores off was ~2 us slower
# than prev. The decoder tests that cover the attention on new; ncu of new and prev (98584e2),
# twice each; new's trace.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.CachesFull*:DecoderPlan.ALong*:DecoderPlan.OneAndEight*:DecoderPlan.TheDecodeForm*:DecoderPlan.BeamDecode*:DecoderPlan.PastKeys*' > $R/run295-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run295-tests.log | head -20
[ $rc = 0 ] || { grep -B3 -A12 "Failure" $R/run295-tests.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in new prev new prev; do
  [ $b = new ] && bin=$C/grape || bin=$C/grape_prev
  GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' | tr '\n' ' ' | sed "s/^/ncu $b: /"; echo
done
GRAPE_CACHE_DIR=/tmp/gc-new GRAPE_MONO_TRACE=$R/run295-trace-new.txt \
  timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
grep -E "^(0|2|3|12|24) |total" $R/run295-trace-new.txt
echo "total $(( $(date +%s) - t0 )) s"
