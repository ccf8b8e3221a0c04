#!/usr/bin/env bash
# GPU run 227 (thirty-fifth session), run as one command line after run 226 on the same warm
# machine: bench/beam with its PyTorch peer for prompt seeds 2 and 3 (run 226: seed 1, the default).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry; export GRAPE_SOURCE_DIR=$PWD GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0
for s in 2 3; do
  D=$(mktemp -d)
  timeout 110 python3 bench/beam/bench_beam.py --grape $C/grape --out $D/b --iters 3 --seed $s > $OUT/run227-beam-seed$s.log 2>&1
  echo "seed $s rc=$?"; grep -E "tokens|graph executor|CUDA-graph step|Target" $OUT/run227-beam-seed$s.log | head -8
  cp $D/b/beam_summary.json $OUT/run227-beam_summary-seed$s.json
done
