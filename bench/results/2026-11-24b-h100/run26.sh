#!/usr/bin/env bash
# GPU run 26 (the head): the whole GPU suite, bench/shapes again (30 iterations), overhead.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r26; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
python3 -c "import numpy as np; np.save('/tmp/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
for ex in eager graph; do $B/grape bench bench/overhead/overhead.grp --input x=/tmp/x_ovh.npy --backend cuda --executor $ex --warmup 20 --iters 300 2>&1 | head -2 | tail -1; done | tee $R/overhead.txt
timeout 300 python3 bench/shapes/bench_shapes.py --grape $B/grape --out /tmp/shapes --iters 30 --warmup 3 > $R/shapes.log 2>&1
echo "shapes rc=$?"; tail -8 $R/shapes.log
mkdir -p $R/shapes; find /tmp/shapes -maxdepth 1 -type f \( -name '*.json' -o -name '*.md' \) -exec cp {} $R/shapes/ \;
tar czf $OUT/r26.tgz -C /tmp r26
echo "total $(( $(date +%s) - t0 )) s"
