#!/usr/bin/env bash
# GPU run 202 (thirty-second session), on the folded-updates binary: (1) compute-sanitizer
# racecheck + initcheck + memcheck over every example and control-flow case on the eager executor,
# memcheck on the graph executor (failing logs kept); (2) the mono executor's tests again (run 201's
# failure: a batched matmul's body has #pragma unroll, which persistent_source refused; fixed).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gs timeout 240 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-eager --sanitizer $S --tools racecheck,initcheck,memcheck \
  --executors eager --jobs 8 > $R/run202-sanitize-eager.log 2>&1
echo "sanitize eager rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san-eager/summary.txt 2>/dev/null; cp $R/san-eager/summary.txt $R/run202-sanitize-eager-summary.txt 2>/dev/null
GRAPE_CACHE_DIR=/tmp/gs timeout 150 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-graph --sanitizer $S --tools memcheck \
  --executors graph --jobs 8 > $R/run202-sanitize-graph.log 2>&1
echo "sanitize graph rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san-graph/summary.txt 2>/dev/null; cp $R/san-graph/summary.txt $R/run202-sanitize-graph-summary.txt 2>/dev/null
for d in $R/san-eager $R/san-graph; do grep -l "ERROR SUMMARY: [1-9]" -r $d 2>/dev/null | head -20 > $d.failing; done
cat $R/san-eager.failing $R/san-graph.failing | head -40
tar czf $R/run202-san-failing.tgz $(cat $R/san-eager.failing $R/san-graph.failing) 2>/dev/null; rm -rf $R/san-eager $R/san-graph $R/*.failing
gzip -f $R/run202-sanitize-*.log
GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='MonoExecutor.*:GpuParity.ControlFlowCases:AutoExecutor.ControlFlowCases:Plan/Executors.ControlFlowCases/*' > $R/run202-gpu-tests.log 2>&1
echo "gpu tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|mono:" $R/run202-gpu-tests.log
echo "total $(( $(date +%s) - t0 )) s"
