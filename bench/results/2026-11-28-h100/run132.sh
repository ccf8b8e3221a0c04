#!/usr/bin/env bash
# GPU run 132: where the cold build's extra 4 s with block sequences goes on 16 cores.
# `grape compile` with and without sequences under bash `time` (user and sys), then NVRTC alone
# over the same sources (scripts/probes/nvrtc_parallel.py) on 16 threads.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry
nvidia-smi -L; nproc
for s in 1 0; do echo "GRAPE_SEQUENCES=$s"; time (GRAPE_SEQUENCES=$s GRAPE_CACHE_DIR=/tmp/cold$s $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1); done
rm -rf /tmp/dk && mkdir -p /tmp/dk && GRAPE_DUMP_KERNELS=/tmp/dk GRAPE_CACHE_DIR=/tmp/cold2 $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1
timeout 200 python3 scripts/probes/nvrtc_parallel.py /tmp/dk 16
