#!/usr/bin/env bash
# GPU run 63 (the head, 45ef038): bench/beam with its PyTorch peer (issue 8's beam target).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r63; mkdir -p $R
t0=$(date +%s)
timeout 400 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; grep -E 'tokens Grape vs peer' $R/beam.log | tail -1 | cut -c1-300; grep -A7 '^| variant' $R/beam.log | tail -7
cp /tmp/beam/*.json /tmp/beam/*.md $R/ 2>/dev/null
tar czf $OUT/r63.tgz -C /tmp r63
