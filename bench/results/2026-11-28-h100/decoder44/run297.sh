#!/usr/bin/env bash
# Run 297 (forty-fourth session): lm_head's items claimed at run time (GRAPE_DECODER_LM_CLAIM=F: each
# block lists the first F rounds, the rest go to whichever producer asks first).
# build-carry/: grape, grape_gpu_tests (75312f0's code, as runs 295-296), grape_claim and
# grape_gpu_tests_claim (the working tree with the knob, off by default).
#  1. the whole GPU suite on grape_gpu_tests_claim with GRAPE_DECODER_LM_CLAIM=4 in 4 shards (every
#     decoder test then claims; the new test sets its own values);
#  2. ncu gpu__time_duration of grape_decoder (10 launches after 5), two rounds interleaved: head,
#     claim binary off, F = 4, 3, 5;
#  3. traces and stamps of claim off and F = 4 (lm_head's blocks' ends).
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_claim
export GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GRAPE_DECODER_LM_CLAIM=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 400 $C/grape_gpu_tests_claim \
    --gtest_color=no > $R/run297-shard$i.log 2>&1 &
done
wait
unset GTEST_TOTAL_SHARDS
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run297-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run297-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run297-shard$i.log | sort -u | head -10
done
grep -h -B3 -A12 "Failure" $R/run297-shard*.log | head -40
echo "tests run: $(grep -hE '^\[ +RUN +\]' $R/run297-shard*.log | wc -l)"
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1 bin=$2
  shift 2
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' |
    tr '\n' ' ' | sed "s/^/ncu $name: /"
  echo
}
for round in 1 2; do
  variant head $C/grape
  variant off $C/grape_claim
  variant claim4 $C/grape_claim GRAPE_DECODER_LM_CLAIM=4
  variant claim3 $C/grape_claim GRAPE_DECODER_LM_CLAIM=3
  variant claim5 $C/grape_claim GRAPE_DECODER_LM_CLAIM=5
done
for v in off claim4; do
  case $v in
    off) e=() ;;
    claim4) e=(GRAPE_DECODER_LM_CLAIM=4) ;;
  esac
  env "${e[@]}" GRAPE_CACHE_DIR=/tmp/gc-$v GRAPE_COMPILE_WORKER=$C/grape_claim GRAPE_MONO_TRACE=$R/run297-trace-$v.txt \
    GRAPE_MONO_TRACE_STAMPS=$R/run297-stamps-$v.txt \
    timeout 60 $C/grape_claim bench "${A[@]}" --executor mono --warmup 5 --iters 20 > $R/run297-bench-$v.txt 2>&1
  echo "trace $v: $(grep -E '^(22|23|24) ' $R/run297-trace-$v.txt | awk '{printf "step %s span %s wake %s; ", $1, $2, $3}') $(grep total $R/run297-trace-$v.txt)"
  python3 scripts/decoder_stamps.py $R/run297-stamps-$v.txt 24 | tail -n +2
  gzip -f $R/run297-stamps-$v.txt
done
echo "total $(( $(date +%s) - t0 )) s"
