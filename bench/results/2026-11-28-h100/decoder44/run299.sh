#!/usr/bin/env bash
# Run 299 (forty-fourth session), with run 298's build-carry/grape_cx and grape_gpu_tests_cx (the
# final kernel: lm_head's items past 4 listed rounds claimed at run time):
#  1. the three tests run 298's fourth shard did not reach (its 340 s limit);
#  2. compute-sanitizer memcheck over two decoder-plan calls of the real GPT-2 decode_step (the
#     claims are new synchronisation: a ticket counter and a slot that ends a block's loop);
#  3. ncu, two rounds interleaved: the default (4 listed rounds), 3, 6, and 6 with 6 items a block
#     put into L2 during the last layers (GRAPE_DECODER_LM_L2=6);
#  4. compute-sanitizer initcheck over the same calls, last (the budget may end first).
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_cx
GRAPE_CACHE_DIR=/tmp/gt timeout 90 $C/grape_gpu_tests_cx --gtest_color=no \
  --gtest_filter='Plan/Executors.ControlFlowCases/1:Plan/Executors.OutputsOutliveTheirSession/1:Plan/Executors.Gpt2EveryEntry/1' \
  > $R/run299-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s: $(grep -E '^\[ +(OK|FAILED|PASSED) ' $R/run299-tests.log | tr '\n' ' ')"
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gm timeout 100 $S --tool memcheck $C/grape_cx bench "${A[@]}" --executor mono --warmup 1 --iters 1 \
  > $R/run299-memcheck.txt 2>&1
echo "memcheck rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY' $R/run299-memcheck.txt) $(grep -m1 -o 'plan: [a-z]*' $R/run299-memcheck.txt)"
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1
  shift 1
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name timeout 40 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $C/grape_cx bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' |
    tr '\n' ' ' | sed "s/^/ncu $name: /"
  echo
}
for round in 1 2; do
  variant listed4
  variant listed3 GRAPE_DECODER_LM_CLAIM=3
  variant listed6 GRAPE_DECODER_LM_CLAIM=6
  variant listed6l2 GRAPE_DECODER_LM_CLAIM=6 GRAPE_DECODER_LM_L2=6
done
echo "ncu done $(( $(date +%s) - t0 )) s"
GRAPE_CACHE_DIR=/tmp/gm timeout 100 $S --tool initcheck $C/grape_cx bench "${A[@]}" --executor mono --warmup 1 --iters 1 \
  > $R/run299-initcheck.txt 2>&1
echo "initcheck rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY' $R/run299-initcheck.txt)"
