#!/usr/bin/env bash
# GPU run 142 (one H100): long rows over thread-block clusters (row_norm.cuh, LaunchRule::cluster_rows).
# (1) bench/rows/log_softmax.grp (beam search's 5 x 50257 candidate scores) under ncu, the base
# binary (635e253, one block per row) against the head, alternating; (2) the whole GPU suite with
# the new GpuParity.LongRowNormsOverClustersOfBlocks (builds through worker processes);
# (3) bench/beam with the head, then beam_search graph with base and head alternating, same inputs.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
D=$(mktemp -d)
python3 -c "import numpy as np; r=np.random.default_rng(5); np.save('$D/x.npy', (3*r.standard_normal((5, 50257))).astype(np.float16)); np.save('$D/s.npy', r.standard_normal(5).astype(np.float32))"
for round in 1 2; do
  for b in grape-base grape; do
    GRAPE_CACHE_DIR=$D/kc-$b $C/$b run bench/rows/log_softmax.grp --input x=$D/x.npy --input s=$D/s.npy --backend cuda --output $D/out-$b >/dev/null
    t=$(GRAPE_CACHE_DIR=$D/kc-$b ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__cluster_size_x -c 1 --csv $C/$b run bench/rows/log_softmax.grp \
        --input x=$D/x.npy --input s=$D/s.npy --backend cuda --output $D/out-$b 2>/dev/null | grep -E "duration|grid_size|cluster" | awk -F'","' '{print $(NF-2)"="$NF}' | tr -d '"' | tr '\n' ' ')
    echo "log_softmax 5x50257 round $round $b: $t"
  done
done
python3 -c "
import numpy as np
a=np.load('$D/out-grape-base/out0.npy'); b=np.load('$D/out-grape/out0.npy')
print('log_softmax head vs base: max abs diff', float(np.abs(a-b).max()), 'rel L2', float(np.linalg.norm(a-b)/np.linalg.norm(a)))"
export GRAPE_COMPILE_WORKER=$C/grape
rm -rf /tmp/grape-cache
GRAPE_SKIP_BENCH=1 OUT=$R scripts/gpu-check.sh run 2>&1 | tail -8
grep -E "LongRowNormsOverClusters|RowAndSliceTemplates|BlockSequences" $R/gpu-tests.log | grep -E "OK|FAIL" | head
python3 bench/beam/bench_beam.py --grape $C/grape --out $D/beam 2>&1 | tail -14
B=$D/beam
for round in 1 2; do
  for b in grape-base grape; do
    GRAPE_CACHE_DIR=$B/kc-$b $C/$b bench examples/gpt2.grp --weights $B/gpt2.safetensors --backend cuda --entry beam_search \
      --input prompt=$B/beam_prompt.npy --executor graph --warmup 1 --iters 5 2>&1 | grep -E "latency" | sed "s/^/beam_search graph round $round $b: /"
  done
done
