#!/usr/bin/env bash
# GPU run 20 (tenth session): shape buckets in the graph executor (nodes rewritten in place),
# the whole GPU suite, bench/shapes (GPT-2 prefill 1..1024 against one PyTorch graph per length).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry
t0=$(date +%s)
nvidia-smi -L
timeout 150 $B/grape_gpu_tests --gtest_color=no --gtest_filter='GraphExecutor.Shape*:GraphExecutor.Exact*' > $OUT/buckets-tests.log 2>&1
grep -E "^\[  (PASSED|FAILED)|Failure|error|Expected|Which|actual" $OUT/buckets-tests.log | head -40
echo "bucket tests $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 280 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > $OUT/gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $OUT/gpu-tests.log
python3 -c "import numpy as np; np.save('/tmp/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
for ex in eager graph; do $B/grape bench bench/overhead/overhead.grp --input x=/tmp/x_ovh.npy --backend cuda --executor $ex --warmup 20 --iters 300 2>&1 | head -3; done > $OUT/overhead.txt
cat $OUT/overhead.txt
timeout 330 python3 bench/shapes/bench_shapes.py --grape $B/grape --out /tmp/shapes --iters 10 --warmup 2 > $OUT/shapes.log 2>&1
echo "shapes rc=$?"; tail -25 $OUT/shapes.log
mkdir -p $OUT/shapes; find /tmp/shapes -maxdepth 2 -type f \( -name '*.json' -o -name '*.md' -o -name '*.log' -o -name '*.txt' \) -size -5M -exec cp {} $OUT/shapes/ \;
echo "total $(( $(date +%s) - t0 )) s"
