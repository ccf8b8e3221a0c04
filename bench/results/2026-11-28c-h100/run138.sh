#!/usr/bin/env bash
# GPU run 138 (one H100, fresh machine): the cold build of every gpt2.grp kernel with NVRTC's own
# cache off (-no-cache, 7de6533) against on (GRAPE_NVRTC_CACHE=1, the behaviour before), each with
# an empty CUDA_CACHE_PATH (NVRTC's cache follows it, run 135) and no Grape kernel cache; then the
# whole GPU suite (the NVRTC option and the one compile pool change every session build).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=$PWD/build-carry
R=$OUT
nvidia-smi -L; nproc
for cfg in new old new old; do
  env=""; [ $cfg = old ] && env="GRAPE_NVRTC_CACHE=1"
  echo "== cold build, $cfg ($env)"
  d=$(mktemp -d)
  /usr/bin/time -f "%e s wall, %U s user, %S s sys" env $env CUDA_CACHE_PATH=$d GRAPE_CACHE_DIR=$(mktemp -d) \
    GRAPE_BUILD_TRACE=$R/build-trace-$cfg-$RANDOM.txt $B/grape compile examples/gpt2.grp --arch sm_90 2>&1 | tail -2
  du -sh $d
done
GRAPE_SKIP_BENCH=1 OUT=$R scripts/gpu-check.sh run 2>&1 | tail -15
