#!/usr/bin/env bash
# Run 305 (forty-fifth session): GRAPE_DECODER_LM_LATE=P, the first claimed lm_head items put into
# L2 as each layer block's last layer item is copied (DRAM is nearly idle from then until lm_head's
# blocks free their rings: run 303's trace has lm_head's blocks starting their products 2.1 us into
# it, and the listed items come from L2).
#  1. the new test and the claims' and five-rows tests;
#  2. ncu time and DRAM read, three rounds interleaved: the default, P = 1, 2 and 4;
#  3. the trace of P = 2.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gt timeout 110 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.ClaimedItemsIntoL2Late:DecoderPlan.LmHeadItemsClaimedAtRunTime:DecoderPlan.FiveRowsOverTheWholeCache' \
  > $R/run305-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s: $(grep -E '^\[ +(OK|FAILED) ' $R/run305-tests.log | tr '\n' ' ')"
grep -B3 -A12 "Failure" $R/run305-tests.log | head -30
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1
  shift 1
  env "$@" GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc-$name timeout 40 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 \
    --launch-count 10 $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 15 > /tmp/ncu-$name.txt 2>&1
  echo "ncu $name: $(grep -E 'duration' /tmp/ncu-$name.txt | awk '{print $NF}' | tr '\n' ' ')"
  echo "dram $name: $(grep -E 'dram__bytes_read' /tmp/ncu-$name.txt | awk '{print $NF $(NF-1)}' | tr '\n' ' ')"
  grep -m3 -E 'rror' /tmp/ncu-$name.txt
}
for round in 1 2 3; do
  variant default
  variant late1 GRAPE_DECODER_LM_LATE=1
  variant late2 GRAPE_DECODER_LM_LATE=2
  variant late4 GRAPE_DECODER_LM_LATE=4
done | tee $R/run305-ncu.txt
echo "ncu done $(( $(date +%s) - t0 )) s"
GRAPE_DECODER_LM_LATE=2 GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc-late2 GRAPE_MONO_TRACE=$R/run305-trace-late2.txt \
  GRAPE_MONO_TRACE_STAMPS=$R/run305-stamps-late2.txt \
  timeout 40 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
echo "trace late2: $(grep -E '^(23|24) ' $R/run305-trace-late2.txt | cut -d'|' -f1 | tr '\n' ';') $(grep total $R/run305-trace-late2.txt)"
python3 scripts/decoder_stamps.py $R/run305-stamps-late2.txt 24 | tail -n +2 | head -7
gzip -f $R/run305-stamps-late2.txt
echo "total $(( $(date +%s) - t0 )) s"
