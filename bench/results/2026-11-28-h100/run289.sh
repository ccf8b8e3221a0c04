#!/usr/bin/env bash
# GPU run 289 (forty-second session): step 0's chain. v1: the token ids and the position by value
# in the parameter block (the first item's size and step 0's embedding rows waited for global
# loads of them); new: v1 + the producer starts before the cluster barrier (its copies arrive on
# its own block's barriers only). A few decoder tests on the new binary; ncu of HEAD (a7b4403),
# v1 and new, twice each; traces of HEAD and new.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.TheDecodeForm*:DecoderPlan.ThePaceIsTuned*:DecoderPlan.OneAndEight*:DecoderPlan.BeamDecode*' > $R/run289-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run289-tests.log | head -40
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run289-tests.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in head v1 new head v1 new; do
  [ $b = new ] && bin=$C/grape || bin=$C/grape_$b
  GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' | tr '\n' ' ' | sed "s/^/ncu $b: /"; echo
done
for b in head new; do
  [ $b = new ] && bin=$C/grape || bin=$C/grape_$b
  GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin GRAPE_MONO_TRACE=$R/run289-trace-$b.txt \
    timeout 60 $bin bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "$b:"; grep -E "^(0|1|2|24) |total" $R/run289-trace-$b.txt
done
echo "total $(( $(date +%s) - t0 )) s"
