#!/usr/bin/env bash
# GPU run 230 (thirty-sixth session): the library code of main's head (unchanged since 3f771e2; the
# review clean-up afb6375 had not run on a GPU): (1) the whole GPU suite, 4 shards; (2)
# compute-sanitizer memcheck and initcheck over every example and control-flow case, eager
# (initcheck last ran in run 212); (3) decode_step graph latency for the record.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 320 $C/grape_gpu_tests --gtest_color=no > $R/run230-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run230-gpu-tests.[0-3].log > $R/run230-gpu-tests.log; rm $R/run230-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run230-gpu-tests.log
gzip -f $R/run230-gpu-tests.log
echo "gpu tests $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs-eager timeout 190 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-eager --sanitizer $S --tools memcheck,initcheck \
  --executors eager --jobs 8 > $R/run230-sanitize-eager.log 2>&1
echo "sanitize eager (memcheck, initcheck) rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san-eager/summary.txt 2>/dev/null; cp $R/san-eager/summary.txt $R/run230-sanitize-eager-summary.txt 2>/dev/null
grep -l "ERROR SUMMARY: [1-9]" -r $R/san-eager 2>/dev/null | head -20 > $R/failing.txt; cat $R/failing.txt
tar czf $R/run230-san-eager-failing.tgz $(cat $R/failing.txt) 2>/dev/null; rm -rf $R/san-eager $R/failing.txt
gzip -f $R/run230-sanitize-eager.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
timeout 60 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --executor graph --entry decode_step \
  --input tok=$D/tok.npy --input p=$D/p.npy --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph: /" | tee $R/run230-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
