#!/usr/bin/env bash
# GPU run 109: TMA loads for the Hopper matrix-product tiles. The whole GPU suite (TMA on by
# default); BERT b=1 / b=16 (graph) with GRAPE_GEMM_TMA=0 (cp.async, the old path) against TMA at
# 4, 6 and 8 stages for the 128 x 64 tiles, two rounds; ncu durations of BERT b=1 layer 0 for
# cp.async and TMA.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r109; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc109-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure\|error" $R/gpu-tests.log | head -40
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local c=$1; shift; echo "== $c $*" | cut -c1-40; GRAPE_CACHE_DIR=/tmp/gc-$c $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|rror" | head -2; }
for r in 1 2; do
  for c in tma0 tma4 tma6 tma8; do
    case $c in tma0) export GRAPE_GEMM_TMA=0 GRAPE_GEMM_WGMMA64_STAGES=4;; tma4) export GRAPE_GEMM_TMA=1 GRAPE_GEMM_WGMMA64_STAGES=4;;
      tma6) export GRAPE_GEMM_TMA=1 GRAPE_GEMM_WGMMA64_STAGES=6;; tma8) export GRAPE_GEMM_TMA=1 GRAPE_GEMM_WGMMA64_STAGES=8;; esac
    for b in 1 16; do
      gb $c examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
    done
  done
done
echo "bench $(( $(date +%s) - t0 )) s"
for c in tma0 tma4; do
  [ $c = tma0 ] && export GRAPE_GEMM_TMA=0 || export GRAPE_GEMM_TMA=1
  export GRAPE_GEMM_WGMMA64_STAGES=4
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$c timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $c"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
