#!/usr/bin/env bash
# GPU run 95 (the head, 6ce942b's code): bench/run.sh without the kernel, beam and shape benchmarks
# (decode and overhead with their peers, then BERT with its peer, everything checked first).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1
t0=$(date +%s)
bench/run.sh $PWD/build-carry/grape /tmp/b95 2>&1 | grep -v -i warn | tail -30
cp /tmp/b95/report.txt /tmp/b95/bert/bert_results.md $OUT/ 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
