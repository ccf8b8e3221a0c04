#!/usr/bin/env bash
# Run 302 (forty-fifth session): lm_head's L2 prefetches spread a piece after each weight copy
# (GRAPE_DECODER_LM_SPREAD) on by default, after run 301 measured it 0.56 us faster with the claims.
# build-carry/: grape, grape_gpu_tests (main with GRAPE_DECODER_LM_SPREAD defaulting to 1).
#  1. ncu gpu__time_duration and dram__bytes_read of grape_decoder (10 launches after 5), three
#     rounds interleaved: spread (the default), nospread (GRAPE_DECODER_LM_SPREAD=0), spread with
#     6 and 8 layer steps of lm_head items put into L2 (GRAPE_DECODER_LM_L2; 4 is the default);
#  2. the whole GPU suite in 4 shards.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1
  shift 1
  env "$@" GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc-$name timeout 40 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 \
    --launch-count 10 $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 15 > /tmp/ncu-$name.txt 2>&1
  echo "ncu $name: $(grep -E 'duration' /tmp/ncu-$name.txt | awk '{print $NF}' | tr '\n' ' ')"
  echo "dram $name: $(grep -E 'dram__bytes_read' /tmp/ncu-$name.txt | awk '{print $NF $(NF-1)}' | tr '\n' ' ')"
  grep -m3 -E 'rror' /tmp/ncu-$name.txt
}
for round in 1 2 3; do
  variant spread
  variant nospread GRAPE_DECODER_LM_SPREAD=0
  variant spread6 GRAPE_DECODER_LM_L2=6
  variant spread8 GRAPE_DECODER_LM_L2=8
done | tee $R/run302-ncu.txt
echo "ncu done $(( $(date +%s) - t0 )) s"
export GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 390 $C/grape_gpu_tests --gtest_color=no \
    > $R/run302-shard$i.log 2>&1 &
done
wait
unset GTEST_TOTAL_SHARDS
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run302-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run302-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run302-shard$i.log | sort -u | head -10
done
grep -h -B3 -A12 "Failure" $R/run302-shard*.log | head -40
echo "tests run: $(grep -hE '^\[ +RUN +\]' $R/run302-shard*.log | wc -l)"
echo "total $(( $(date +%s) - t0 )) s"
