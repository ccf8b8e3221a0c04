#!/usr/bin/env bash
# GPU run 169 (the head, GRAPE_GEMV_PDL=3 by default): the whole GPU suite (four shards, as
# scripts/gpu-check.sh runs it) and bench/beam with its peer.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_SKIP_BENCH=1 OUT=$R timeout 330 scripts/gpu-check.sh run 2>&1 | tail -6
echo "suite OK lines: $(grep -cE '^\[       OK' $R/gpu-tests.log 2>/dev/null)"; grep -E "^\[  FAILED" $R/gpu-tests.log | head
timeout 120 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8
