#!/usr/bin/env bash
# GPU run 28: topk rows split over blocks: the GPU suite, the probe, bench/beam, eager = graph tokens.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r28; mkdir -p $R
t0=$(date +%s)
timeout 120 $B/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.TopK' > $R/topk-test.log 2>&1
grep -E "^\[  (PASSED|FAILED)|Failure" $R/topk-test.log | head -5
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log; grep -c "^\[       OK" $R/gpu-tests.log
python3 -c "import numpy as np; r = np.random.default_rng(0); np.save('/tmp/xr.npy', r.standard_normal(251285).astype(np.float32))"
$B/grape bench build-carry/topk_bench.grp --input x=/tmp/xr.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "topk" | tee $R/topk.txt
timeout 240 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$?"; grep -E 'tokens Grape vs peer' $R/beam.log | tail -1 | cut -c1-400; grep -A7 '^| variant' $R/beam.log | tail -7
$B/grape run examples/gpt2.grp --entry beam_search --weights /tmp/beam/gpt2.safetensors --input prompt=/tmp/beam/beam_prompt.npy --backend cuda --executor eager --output /tmp/be > /dev/null 2>&1
python3 -c "
import numpy as np, glob
e = np.load('/tmp/be/out0.npy'); gdir = [d for d in glob.glob('/tmp/beam/grape*') if glob.glob(d + '/out0.npy')]
print('graph dirs', gdir)
for d in gdir: print(d, 'eager == graph tokens:', np.array_equal(e, np.load(d + '/out0.npy')))
" 2>&1 | tee $R/eager-graph.txt
cp /tmp/beam/*.json /tmp/beam/*.md $R/ 2>/dev/null
tar czf $OUT/r28.tgz -C /tmp r28
echo "total $(( $(date +%s) - t0 )) s"
