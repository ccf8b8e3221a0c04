#!/usr/bin/env bash
# GPU run 257 (thirty-eighth session): the decoder plan's pace tuned at the first run (and kept in
# the tuning cache): the decoder-plan tests, then decode_step under mono with the pace tuned
# (a fresh cache directory) against GRAPE_TUNE=0 (the default 250 ns) and graph, same run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
F1='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*:DecoderPlan.OneAndEight*:DecoderPlan.ThePace*:DecoderPlan.APace*'
F2='DecoderPlan.Positions*:DecoderPlan.NineRows*:DecoderPlan.TheDecodeForm*:DecoderPlan.OtherWidths*:DecoderPlan.Auto*'
i=0
for f in "$F1" "$F2"; do
  i=$((i + 1))
  GRAPE_CACHE_DIR=/tmp/g$i timeout 240 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$f" > $R/run257-$i.log 2>&1 &
done
wait
cat $R/run257-[12].log > $R/run257-tests.log; rm $R/run257-[12].log
grep -E "^\[       OK|^\[  (PASSED|FAILED)|Failure|plan|expected" $R/run257-tests.log | head -30
echo "tests $(( $(date +%s) - t0 )) s"
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
bench() { timeout 100 $C/grape bench "${B[@]}" --warmup 20 --iters 300 "$@" 2>&1 | grep -E "latency|plan|rror"; }
{
  GRAPE_CACHE_DIR=/tmp/g1 GRAPE_TUNE=0 bench --executor graph | sed "s/^/graph: /"
  GRAPE_CACHE_DIR=/tmp/g1 GRAPE_TUNE=0 bench --executor mono | sed "s/^/mono, default pace: /"
  GRAPE_CACHE_DIR=/tmp/g1 bench --executor mono | sed "s/^/mono, pace tuned: /"
  GRAPE_CACHE_DIR=/tmp/g1 GRAPE_TUNE=0 bench --executor mono | sed "s/^/mono, default pace: /"
  GRAPE_CACHE_DIR=/tmp/g1 bench --executor mono | sed "s/^/mono, pace tuned (cached): /"
} | tee $R/run257-bench.txt
grep -c pace /tmp/g1/tuning/tuning.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
