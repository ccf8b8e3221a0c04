#!/usr/bin/env bash
# GPU run 220 (thirty-fourth session), the final library code (phase marks; gemv_mma prefetching
# the next product's weight): (1) the whole GPU suite, 4 shards; (2) compute-sanitizer memcheck
# over every example and control-flow case, eager; (3) decode_step graph, beam_search, generate
# while the device budget lasts.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
export GRAPE_CACHE_DIR=/tmp/gt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 270 $C/grape_gpu_tests --gtest_color=no > $R/run220-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run220-gpu-tests.[0-3].log > $R/run220-gpu-tests.log; rm $R/run220-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run220-gpu-tests.log
gzip -f $R/run220-gpu-tests.log
echo "gpu tests $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 80 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-eager --sanitizer $S --tools memcheck \
  --executors eager --jobs 8 > $R/run220-sanitize-eager.log 2>&1
echo "sanitize eager rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san-eager/summary.txt 2>/dev/null; cp $R/san-eager/summary.txt $R/run220-sanitize-eager-summary.txt 2>/dev/null
grep -l "ERROR SUMMARY: [1-9]" -r $R/san-eager 2>/dev/null | head -20 > $R/failing.txt; cat $R/failing.txt
tar czf $R/run220-san-failing.tgz $(cat $R/failing.txt) 2>/dev/null; rm -rf $R/san-eager $R/failing.txt
gzip -f $R/run220-sanitize-eager.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
export GRAPE_CACHE_DIR=$D/k
left=$(( 400 - ($(date +%s) - t0) ))
echo "benches with ${left} s left"
if [ $left -gt 25 ]; then
  for round in 1 2; do
    $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step round $round: /"
  done | tee $R/run220-decode.txt
fi
left=$(( 400 - ($(date +%s) - t0) ))
if [ $left -gt 45 ]; then
  timeout 40 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry beam_search --input prompt=$D/prompt.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search: /" | tee -a $R/run220-decode.txt
fi
echo "total $(( $(date +%s) - t0 )) s"
