#!/usr/bin/env bash
# GPU run 133: the cold build measured in the other order (run 132 found the second `grape compile`
# of a machine nearly free: 3 s of CPU for 1075 kernels). On a fresh machine: without sequences
# first, then with, then with again; what caches exist before and after.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry
nvidia-smi -L; env | grep -i -E "cache|nvrtc|cuda" | sort
du -sh ~/.nv ~/.cache 2>/dev/null
for s in 0 1 1; do echo "GRAPE_SEQUENCES=$s"; time (GRAPE_SEQUENCES=$s GRAPE_CACHE_DIR=/tmp/cold-$RANDOM $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1); done
du -sh ~/.nv ~/.cache 2>/dev/null; find ~/.nv ~/.cache -maxdepth 3 2>/dev/null | head -20
