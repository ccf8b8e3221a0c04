#!/usr/bin/env bash
# NOT RUN (the forty-third session had 188 s of device time: too little to start a machine). The
# run prepared for the next GPU session; its outputs would be run295-*.
#
# Build first (here, not on the device):
#   cmake --build build-gpu -j2 --target grape grape_gpu_tests
#   mkdir -p build-carry && cp build-gpu/grape build-carry/grape && cp build-gpu/tests/gpu/grape_gpu_tests build-carry/
#   git stash -u; git apply bench/results/2026-11-28-h100/decoder42/attention_mma_v2_not_run.patch
#   cmake --build build-gpu -j2 --target grape grape_gpu_tests
#   cp build-gpu/grape build-carry/grape_v2 && cp build-gpu/tests/gpu/grape_gpu_tests build-carry/grape_gpu_tests_v2
#   git checkout jit/kernels/decoder_step.cuh; git stash pop; cmake --build build-gpu -j2
# then run with carry ["build-carry"]: bash bench/results/2026-11-28-h100/decoder43/run295_next.sh
#
# What it measures, all on one machine (compare only within the run):
#  1. correctness first: the decoder-plan and mono tests on head (with the new lm_head knob test)
#     and on v2 (the tensor-core attention of decoder42/attention_mma_v2_not_run.patch);
#  2. ncu gpu__time_duration of grape_decoder (10 launches after 5), twice each, interleaved:
#     head; head GRAPE_DECODER_LM_EXTRA=0, =2; head GRAPE_DECODER_LM_SPREAD=1; v2;
#  3. the trace (GRAPE_MONO_TRACE) of each, for the lm_head span and the A steps' wakes, and its
#     stamps (GRAPE_MONO_TRACE_STAMPS) through scripts/decoder_stamps.py for lm_head's blocks.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
F='DecoderPlan.*:MonoExecutor.*'
for v in head v2; do
  [ $v = head ] && T=$C/grape_gpu_tests G=$C/grape || T=$C/grape_gpu_tests_v2 G=$C/grape_v2
  GRAPE_COMPILE_WORKER=$G GRAPE_CACHE_DIR=/tmp/gt-$v timeout 200 $T --gtest_color=no --gtest_filter="$F" \
    > $R/run295-tests-$v.log 2>&1
  rc=$?
  echo "tests $v rc=$rc $(( $(date +%s) - t0 )) s: $(grep -cE '^\[ +OK ' $R/run295-tests-$v.log) ok"
  grep -E "^\[ +(FAILED|SKIPPED) " $R/run295-tests-$v.log | head
  [ $rc = 0 ] || grep -B3 -A12 "Failure" $R/run295-tests-$v.log | head -40
done
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
# variant: name binary env...
variant() {
  local name=$1 bin=$2
  shift 2
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' |
    tr '\n' ' ' | sed "s/^/ncu $name: /"
  echo
}
for round in 1 2; do
  variant head $C/grape
  variant extra0 $C/grape GRAPE_DECODER_LM_EXTRA=0
  variant extra2 $C/grape GRAPE_DECODER_LM_EXTRA=2
  variant spread $C/grape GRAPE_DECODER_LM_SPREAD=1
  variant v2 $C/grape_v2
done
for v in head extra2 spread v2; do
  case $v in
    head) bin=$C/grape e=() ;;
    extra2) bin=$C/grape e=(GRAPE_DECODER_LM_EXTRA=2) ;;
    spread) bin=$C/grape e=(GRAPE_DECODER_LM_SPREAD=1) ;;
    v2) bin=$C/grape_v2 e=() ;;
  esac
  env "${e[@]}" GRAPE_CACHE_DIR=/tmp/gc-$v GRAPE_MONO_TRACE=$R/run295-trace-$v.txt \
    GRAPE_MONO_TRACE_STAMPS=$R/run295-stamps-$v.txt \
    timeout 60 $bin bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "trace $v: $(grep -E '^(18|20|22|24) ' $R/run295-trace-$v.txt | awk '{printf "step %s span %s wake %s; ", $1, $2, $3}') $(grep total $R/run295-trace-$v.txt)"
  python3 scripts/decoder_stamps.py $R/run295-stamps-$v.txt 24 | tail -n +2
  gzip -f $R/run295-stamps-$v.txt
done
echo "total $(( $(date +%s) - t0 )) s"
