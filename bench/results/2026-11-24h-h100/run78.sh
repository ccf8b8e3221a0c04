#!/usr/bin/env bash
# GPU run 78: K splits of 128 x 64 wgmma tiles as thread-block clusters (wgmma64-c2/c4/c8, partial
# tiles added through distributed shared memory). The whole GPU suite; compute-sanitizer memcheck
# and racecheck on the cluster test; BERT b=1 / b=16 (graph, tuned) with the head's binary and
# b8ab536's, two rounds; the eager profile of b=1 (which configuration each product took).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r78; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GRAPE_CACHE_DIR=/tmp/gc GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
grep -E "ClusterSplits|EveryConfiguration" $R/gpu-tests.log | head
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gc timeout 200 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter='Autotune.ClusterSplitsMatchTheCpuEagerAndInAGraph' > $R/san-$tool.log 2>&1
  echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|PASSED|FAILED" $R/san-$tool.log | head -3
done
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local bin=$1; shift; echo "== $bin $*" | cut -c1-110; GRAPE_CACHE_DIR=/tmp/gc-$bin $B/$bin bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do for bin in grape grape_b8ab; do for b in 1 16; do
  gb $bin examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
done; done; done
} > $R/bench.txt 2>&1
cat $R/bench.txt
for bin in grape grape_b8ab; do
GRAPE_CACHE_DIR=/tmp/gc-$bin $B/$bin bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --profile 2>&1 | head -40 > $R/profile-b1-$bin.txt
echo "== $bin"; sed -n 6,22p $R/profile-b1-$bin.txt | cut -c1-150
done
tar czf $OUT/r78.tgz -C /tmp r78
echo "total $(( $(date +%s) - t0 )) s"
