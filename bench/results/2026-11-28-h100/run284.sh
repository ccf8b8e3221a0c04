#!/usr/bin/env bash
# GPU run 284 (forty-first session): the whole GPU test suite (grape_gpu_tests, every test of the
# ctest label gpu) on main's code, in 4 gtest shards at once (one GPU, 16 cores: NVRTC builds
# dominate), each with its own kernel cache.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 530 $C/grape_gpu_tests --gtest_color=no > $R/run284-shard$i.log 2>&1 &
done
wait
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run284-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run284-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run284-shard$i.log | sort -u | head -10
done
grep -hE "^\[ +RUN +\]" $R/run284-shard*.log | wc -l
