#!/usr/bin/env bash
# GPU run 140 (one H100): do NVRTC compiles slow each other inside one process? The 160 distinct
# sm_90 sources of examples/gpt2.grp (GRAPE_DUMP_KERNELS, deduplicated; build-carry/dku) compiled
# by scripts/probes/nvrtc_processes in P processes x T threads, each configuration with an empty
# CUDA_CACHE_PATH; then grape compile (threads, PCH on: the default again) for comparison.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
nproc
for round in 1 2; do
  for cfg in "1 16 1" "16 1 1" "4 4 1" "8 2 1" "2 8 1" "16 1 0" "1 16 0"; do
    CUDA_CACHE_PATH=$(mktemp -d) $C/nvrtc_processes $C/dku sm_90 $cfg | tail -1
  done
  /usr/bin/time -f "grape compile: %e s wall, %U s user, %S s sys" env GRAPE_NVRTC_PCH=1 CUDA_CACHE_PATH=$(mktemp -d) $C/grape compile examples/gpt2.grp --arch sm_90 2>&1 | tail -1
done
