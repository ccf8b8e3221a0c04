#!/usr/bin/env bash
# GPU run 21: shape-bucket tests again (run 20's segfault: an undefined state compared), the
# auto test's bucket key, bench/beam (Grape beam_search vs PyTorch graphed step + Python loop),
# bench/shapes with more iterations. Results in one archive.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r21; mkdir -p $R
t0=$(date +%s)
timeout 200 $B/grape_gpu_tests --gtest_color=no --gtest_filter='GraphExecutor.Shape*:GraphExecutor.Exact*:AutoExecutor.ReportsItsDecision:Plan/Executors.Gpt2GenerateChangingShapes/*' > $R/buckets-tests.log 2>&1
echo "bucket tests rc=$? $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED)|Failure|Expected|Which is|^prefill|^generate" $R/buckets-tests.log | head -40
timeout 300 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; tail -30 $R/beam.log
find /tmp/beam -maxdepth 1 -type f \( -name '*.json' -o -name '*.md' \) -exec cp {} $R/ \;
timeout 240 python3 bench/shapes/bench_shapes.py --grape $B/grape --out /tmp/shapes --iters 30 --warmup 3 > $R/shapes.log 2>&1
echo "shapes rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $R/shapes.log
mkdir -p $R/shapes; find /tmp/shapes -maxdepth 1 -type f \( -name '*.json' -o -name '*.md' \) -exec cp {} $R/shapes/ \;
python3 - <<'PY'
import json, glob
for f in glob.glob('/tmp/shapes/*.json'):
    try: d = json.load(open(f))
    except Exception: continue
    if isinstance(d, dict) and 'shapes' in d and len(d['shapes']) > 100:
        print(f, 'graphs', d['graphs'], 'graph_bytes', d['graph_bytes'])
        for r in d['shapes']:
            if r['value'] <= 18 or r['value'] in (31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024):
                print(r['value'], round(r['first_ms'], 3), round(r['first_wall_ms'], 3), round(r['median_ms'], 3), r['graphs'], r['graph_updates'])
PY
tar czf $OUT/r21.tgz -C /tmp r21
echo "total $(( $(date +%s) - t0 )) s"
