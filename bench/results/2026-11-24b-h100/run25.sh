#!/usr/bin/env bash
# GPU run 25: topk on 64-bit keys with a warp threshold; the whole GPU suite, bench/beam,
# the beam_search kernel profile.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r25; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
timeout 200 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; tail -16 $R/beam.log
find /tmp/beam -maxdepth 1 -type f \( -name '*.json' -o -name '*.md' \) -exec cp {} $R/ \;
python3 -c "import numpy as np; r = np.random.default_rng(0); np.save('/tmp/xr.npy', r.standard_normal(251285).astype(np.float32)); np.save('/tmp/xt.npy', (r.integers(0, 1000, 251285) / 100.0 - 10.8).astype(np.float16).astype(np.float32))"
python3 -c "import numpy as np; np.save('/tmp/pr.npy', np.random.default_rng(1).integers(0,50256,(1,64)).astype(np.int32))"
$B/grape bench examples/gpt2.grp --entry beam_search --random-weights 1 --input prompt=/tmp/pr.npy --backend cuda --executor eager --warmup 1 --iters 1 --profile > $R/beam_profile.txt 2>&1
head -30 $R/beam_profile.txt
for x in xr xt; do build-carry/grape bench build-carry/topk_bench.grp --input x=/tmp/$x.npy --backend cuda --executor eager --warmup 3 --iters 20 --profile 2>&1 | grep -E "topk"; done
tar czf $OUT/r25.tgz -C /tmp r25
echo "total $(( $(date +%s) - t0 )) s"
