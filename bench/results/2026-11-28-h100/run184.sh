#!/usr/bin/env bash
# GPU run 184 (the head): the new control-flow case loop_init_computed_in_branch under
# compute-sanitizer initcheck and memcheck, eager and graph executors, every difftest value.
# NOT RUN in the twenty-ninth session (its device time was spent): run it first next session.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gs
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
t0=$(date +%s)
timeout 45 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools initcheck,memcheck \
  --executors eager,graph --jobs 8 --filter loop_init_computed > $R/run184-sanitize.log 2>&1
echo "rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san/summary.txt 2>/dev/null | head -8
cp $R/san/summary.txt $R/run184-summary.txt 2>/dev/null; rm -rf $R/san
