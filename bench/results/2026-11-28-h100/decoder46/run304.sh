#!/usr/bin/env bash
# Run 304 (forty-fifth session): compute-sanitizer racecheck of the decoder kernel at a small size
# (DecoderPlan.APaceFromTheEnvironment: GPT-2's width, 2 layers, three launches; the real
# decode_step under racecheck printed nothing in 120 s in run 303).
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gr timeout 380 $S --tool racecheck --racecheck-report all $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.APaceFromTheEnvironment' > $R/run304-racecheck.txt 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|^\[ +(OK|FAILED) ' $R/run304-racecheck.txt | tr '\n' ' ')"
grep -E "^========= (Error|Warning|Race)" $R/run304-racecheck.txt | sort | uniq -c | sort -rn | head -12
grep -m2 -A12 -E "^========= (Error|Warning)" $R/run304-racecheck.txt | head -40
gzip -f $R/run304-racecheck.txt
