#!/usr/bin/env bash
# GPU run 228 (thirty-fifth session; run as one command line): compute-sanitizer memcheck over every
# example and control-flow case on the graph executor, the whole sweep (run 225's stopped at 138 of 185).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry; export GRAPE_SOURCE_DIR=$PWD GRAPE_COMPILE_WORKER=$C/grape
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 185 python3 scripts/gpu_sanitize.py --grape $C/grape --out $OUT/san --sanitizer $S --tools memcheck --executors graph --jobs 12 > $OUT/run228-sanitize-graph.log 2>&1
echo "rc=$?"; cat $OUT/san/summary.txt; cp $OUT/san/summary.txt $OUT/run228-sanitize-graph-summary.txt
grep -l "ERROR SUMMARY: [1-9]" -r $OUT/san | head; rm -rf $OUT/san; gzip $OUT/run228-sanitize-graph.log
