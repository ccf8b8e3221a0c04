#!/usr/bin/env bash
# GPU run 179 (the head after the revert of the warp-run experiment, 87cdf71 + docs): the sanitizer
# coverage missing so far. compute-sanitizer racecheck, then initcheck, over every example (tiny
# sizes) and every control-flow case on the eager executor (its sanitized runs may share the GPU,
# eight at a time; it runs the same kernels and block sequences as the graph executor), then
# memcheck of GPT-2's straight-line entries on the mono executor (its loop entries are refused when
# the session is created: those plain runs fail by design and are not sanitized).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gs
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
t0=$(date +%s)
timeout 280 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-race --sanitizer $S --tools racecheck \
  --executors eager --jobs 8 > $R/run179-sanitize-racecheck.log 2>&1
echo "racecheck rc=$? $(( $(date +%s) - t0 )) s"; tail -5 $R/run179-sanitize-racecheck.log
timeout 200 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-init --sanitizer $S --tools initcheck \
  --executors eager --jobs 8 > $R/run179-sanitize-initcheck.log 2>&1
echo "initcheck rc=$? $(( $(date +%s) - t0 )) s"; tail -5 $R/run179-sanitize-initcheck.log
timeout 90 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-mono --sanitizer $S --tools memcheck \
  --executors mono --jobs 8 --filter gpt2 > $R/run179-sanitize-mono.log 2>&1
echo "mono memcheck rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $R/run179-sanitize-mono.log
for d in race init mono; do cp $R/san-$d/summary.txt $R/run179-summary-$d.txt 2>/dev/null; rm -rf $R/san-$d/inputs; done
tar czf $R/run179-sanitize-logs.tar.gz -C $R san-race san-init san-mono 2>/dev/null
rm -rf $R/san-*
