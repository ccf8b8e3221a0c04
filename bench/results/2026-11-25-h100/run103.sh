#!/usr/bin/env bash
# GPU run 103 (keys4: 32 rows, four warps per row group) against build-carry/grape-b9b
# (b9bbce5): the whole GPU suite, then memcheck + racecheck over the attention cases
# (every edge path: ragged rows and keys, both entry points; the autotune test forcing each); BERT b=1 / b=16 graph, alternating,
# two rounds; ncu durations of the attention kernel (layer 0) at b=1 and b=16 for both binaries.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r103; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
F='*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc103-$i timeout 300 $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gc103-0 timeout 200 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter='Shapes/GpuAttention.*:GpuParity.AttentionStoredThroughTheMergeOfHeads' --gtest_color=no > $R/san-$tool.log 2>&1
  echo "$tool: $(grep -E '^\[  (PASSED|FAILED) ' $R/san-$tool.log | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log)"
done
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-60; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for g in grape-b9b grape; do for b in 1 16; do
  gb $g examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
done; done; done
for b in 1 16; do for g in grape-b9b grape; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 8 $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=$b $g"; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done; done
echo "total $(( $(date +%s) - t0 )) s"
