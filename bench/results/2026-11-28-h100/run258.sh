#!/usr/bin/env bash
# GPU run 258 (thirty-eighth session): the decoder plan's final code (the pace measurement in its
# own function, its memory in the statistics): its quick GPU tests, then bench/run.sh's decode and
# overhead parts (kernels and BERT skipped), whose report now has graph and mono beside eager.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/g1 timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.ThePace*:DecoderPlan.APace*:DecoderPlan.FiveRows*:DecoderPlan.Auto*' > $R/run258-tests.log 2>&1
grep -E "^\[       OK|^\[  (PASSED|FAILED)|Failure" $R/run258-tests.log
echo "tests $(( $(date +%s) - t0 )) s"
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_COMPILE=1 timeout 170 bench/run.sh $C/grape $R/bench > $R/run258-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null
rm -rf $R/bench/kernel-cache $R/bench/*.safetensors $R/bench/*/ 2>/dev/null
