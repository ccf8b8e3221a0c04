#!/usr/bin/env bash
# GPU run 192 (the final library code of the thirtieth session): bench/beam with its PyTorch peer;
# decode_step graph; compute-sanitizer racecheck, initcheck and memcheck over every example and
# control-flow case on the eager executor, memcheck over them on the graph executor.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
timeout 200 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8 | head -5
cp $R/beam/beam_results.md $R/run192-beam_results.md 2>/dev/null; rm -rf $R/beam
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
for round in 1 2 3; do
  GRAPE_CACHE_DIR=$D/k $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy \
    --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step graph round $round: /"
done
echo "benches $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 230 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools racecheck,initcheck,memcheck \
  --executors eager --jobs 8 > $R/run192-sanitize-eager.log 2>&1
echo "sanitize eager rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san/summary.txt 2>/dev/null | tail -8
cp $R/san/summary.txt $R/run192-summary-eager.txt 2>/dev/null; tar czf $R/run192-san-eager-logs.tgz -C $R san 2>/dev/null; rm -rf $R/san
GRAPE_CACHE_DIR=/tmp/gs timeout 130 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools memcheck \
  --executors graph --jobs 8 > $R/run192-sanitize-graph.log 2>&1
echo "sanitize graph rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san/summary.txt 2>/dev/null | tail -5
cp $R/san/summary.txt $R/run192-summary-graph.txt 2>/dev/null; rm -rf $R/san
gzip -f $R/run192-sanitize-*.log
echo "total $(( $(date +%s) - t0 )) s"
