#!/usr/bin/env bash
# GPU run 181 (the head, with run 180's fix): bench/beam with its PyTorch peer, twice (the peer's
# time moves between runs), and a graphed decode_step in the same run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
timeout 200 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8
echo "beam $(( $(date +%s) - t0 )) s"
cp $R/beam/beam_results.md $R/run181-beam_results.md 2>/dev/null
ls $R/beam
