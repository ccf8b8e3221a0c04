#!/usr/bin/env bash
# GPU run 174 (the head: sibling updates, lm_head's A by 16-byte loads): bench/beam with its peer;
# compute-sanitizer memcheck and racecheck over GPT-2's entries (eager and graph), then memcheck
# over every example and control-flow case on the graph executor for the time left.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
timeout 150 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8
echo "beam $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
export GRAPE_CACHE_DIR=/tmp/gs
timeout 200 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-gpt2 --sanitizer $S --tools memcheck,racecheck \
  --executors eager,graph --jobs 8 --filter gpt2 > $R/san-gpt2.log 2>&1
echo "sanitize gpt2 rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $R/san-gpt2.log
left=$(( 540 - ($(date +%s) - t0) ))
timeout $left python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-all --sanitizer $S --tools memcheck \
  --executors graph --jobs 8 > $R/san-all.log 2>&1
echo "sanitize all (memcheck, graph) rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $R/san-all.log
ls $R/san-all/memcheck/graph 2>/dev/null | wc -l
rm -rf $R/san-*/inputs
