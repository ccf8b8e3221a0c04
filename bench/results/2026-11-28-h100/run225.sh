#!/usr/bin/env bash
# GPU run 225 (thirty-fifth session), the final library code (gemv_mma: the weight tile by bulk
# tensor copies, the cluster exchange by st.async): (1) the whole GPU suite, 4 shards; (2)
# compute-sanitizer memcheck and racecheck over every example and control-flow case, eager; (3)
# memcheck on the graph executor (last: run 202).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 270 $C/grape_gpu_tests --gtest_color=no > $R/run225-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run225-gpu-tests.[0-3].log > $R/run225-gpu-tests.log; rm $R/run225-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run225-gpu-tests.log
gzip -f $R/run225-gpu-tests.log
echo "gpu tests $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for ex in eager graph; do
  tools=memcheck,racecheck; lim=170
  [ $ex = graph ] && tools=memcheck && lim=100
  GRAPE_CACHE_DIR=/tmp/gs-$ex timeout $lim python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-$ex --sanitizer $S --tools $tools \
    --executors $ex --jobs 8 > $R/run225-sanitize-$ex.log 2>&1
  echo "sanitize $ex ($tools) rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san-$ex/summary.txt 2>/dev/null; cp $R/san-$ex/summary.txt $R/run225-sanitize-$ex-summary.txt 2>/dev/null
  grep -l "ERROR SUMMARY: [1-9]\|RACECHECK SUMMARY: [1-9]" -r $R/san-$ex 2>/dev/null | head -20 > $R/failing.txt; cat $R/failing.txt
  tar czf $R/run225-san-$ex-failing.tgz $(cat $R/failing.txt) 2>/dev/null; rm -rf $R/san-$ex $R/failing.txt
  gzip -f $R/run225-sanitize-$ex.log
done
echo "total $(( $(date +%s) - t0 )) s"
