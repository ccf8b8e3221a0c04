#!/usr/bin/env bash
# NOT RUN (prepared in the forty-third session, which had no device time). After run295_next.sh,
# with the same build-carry/ (head's grape and grape_gpu_tests): the whole GPU test suite on
# main's kernel in 4 gtest shards at once (about 330 s, run 290's pattern), then
# compute-sanitizer memcheck of two decoder-plan calls of the real GPT-2 decode_step (run 291's).
# The suite last ran whole on run 290's split-barrier variant, not on main's kernel.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
export GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 420 $C/grape_gpu_tests --gtest_color=no > $R/run296-shard$i.log 2>&1 &
done
wait
unset GTEST_TOTAL_SHARDS
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run296-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run296-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run296-shard$i.log | sort -u | head -10
done
echo "tests run: $(grep -hE '^\[ +RUN +\]' $R/run296-shard*.log | wc -l)"
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gm timeout 150 $S --tool memcheck $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors \
  --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy --executor mono --warmup 1 --iters 1 \
  > $R/run296-memcheck.txt 2>&1
echo "memcheck rc=$?: $(grep -E 'ERROR SUMMARY' $R/run296-memcheck.txt)"
echo "total $(( $(date +%s) - t0 )) s"
