#!/usr/bin/env bash
# GPU run 112: 64 x 64 wgmma tiles (two warpgroups of 64 x 32; tuning candidates "wgmma-m64",
# "-c2", "-c4") for products whose 128 x 64 tiles fill at most half the GPU. The whole GPU suite;
# memcheck + racecheck over the cluster-split test (which forces the new candidates); BERT b=1 /
# b=16 (graph) against build-carry/grape-base (63624ad), two rounds; ncu durations of BERT b=1
# layer 0 for both, and the tuner's choices.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r112; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc112-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gc112-0 timeout 150 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter='Autotune.ClusterSplits*' --gtest_color=no > $R/san-$tool.log 2>&1
  echo "$tool: $(grep -E '^\[  (PASSED|FAILED) ' $R/san-$tool.log | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log)"
done
python3 bench/bert/make_inputs.py $D > /dev/null
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-40; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency|rror" | head -2; }
for r in 1 2; do
  for g in grape-base grape; do
    for b in 1 16; do
      gb $g examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
    done
  done
done
echo "bench $(( $(date +%s) - t0 )) s"
grep -h "m64" /tmp/gc-grape/tuning/tuning.txt | cut -c1-200 | head -20
for g in grape-base grape; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $g"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
echo "total $(( $(date +%s) - t0 )) s"
