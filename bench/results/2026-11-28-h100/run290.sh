#!/usr/bin/env bash
# GPU run 290 (forty-second session): step 0's item in two parts. new: a stage-A item's lead (the
# q/k/v tile, ln_1, biases) on the slot's mbarrier, its tail (attn c_proj rows, past keys/values)
# on a second one waited for after the product (step 0 waited 1.47 us for its whole item, run
# 289). v2: run 289's "new" (token ids and position by value, producer before the cluster
# barrier). ncu of HEAD (a7b4403), v2 and new, twice each; new's trace; then the whole GPU test
# suite on new in 4 gtest shards at once (as run 284).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 60 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.PastKeys*' > $R/run290-quick.log 2>&1
rc=$?; echo "quick tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED) |Failure" $R/run290-quick.log | head
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run290-quick.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in head v2 new head v2 new; do
  [ $b = new ] && bin=$C/grape || bin=$C/grape_$b
  GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' | tr '\n' ' ' | sed "s/^/ncu $b: /"; echo
done
GRAPE_CACHE_DIR=/tmp/gc-new GRAPE_MONO_TRACE=$R/run290-trace-new.txt GRAPE_MONO_TRACE_STAMPS=$R/run290-stamps-new.txt \
  timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
grep -E "^(0|1|2|24) |total" $R/run290-trace-new.txt; gzip $R/run290-stamps-new.txt
unset GRAPE_TUNE
echo "a/b $(( $(date +%s) - t0 )) s"
export GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 420 $C/grape_gpu_tests --gtest_color=no > $R/run290-shard$i.log 2>&1 &
done
wait
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run290-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run290-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run290-shard$i.log | sort -u | head -10
done
grep -hE "^\[ +RUN +\]" $R/run290-shard*.log | wc -l
echo "total $(( $(date +%s) - t0 )) s"
