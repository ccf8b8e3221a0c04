#!/usr/bin/env bash
# GPU run 286 (forty-first session): opt3 (the products' mma with the weights as the 16-row
# operand) with GRAPE_MONO_TRACE_STAMPS: the trace test, then every item's stamps at position 128
# analysed by scripts/decoder_stamps.py (which block ends each step, and why); then
# compute-sanitizer racecheck over a decoder-plan test (2 layers), time-limited.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt3
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.TheTrace*' > $R/run286-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|Expected|Which" $R/run286-tests.log | head -20
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for i in 1 2; do
  GRAPE_CACHE_DIR=/tmp/gc GRAPE_MONO_TRACE=$R/run286-trace$i.txt GRAPE_MONO_TRACE_STAMPS=$R/run286-stamps$i.txt \
    timeout 60 $C/grape_opt3 bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  grep total $R/run286-trace$i.txt
  python3 scripts/decoder_stamps.py $R/run286-stamps$i.txt > $R/run286-analysis$i.txt; head -30 $R/run286-analysis$i.txt
done
echo "stamps $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gd timeout 240 $S --tool racecheck --racecheck-report all $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.BeamDecodeTakesIt' > $R/run286-racecheck.txt 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t0 )) s"; grep -E "RACECHECK SUMMARY|hazard|Error|\[ +(OK|FAILED|PASSED)" $R/run286-racecheck.txt | sort | uniq -c | sort -rn | head -20
