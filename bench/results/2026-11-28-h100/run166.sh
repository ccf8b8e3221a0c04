#!/usr/bin/env bash
# GPU run 166 (commit in bench/RESULTS.md): the whole GPU suite (four shards, as scripts/gpu-check.sh
# runs it), compute-sanitizer memcheck and racecheck on the changed kernels (the tensor-core GEMV
# with A staged whole: Paths/GpuMatrixProduct cases 30-33; top-k split over 2048-element blocks:
# GpuParity.TopK), and bench/beam with its peer.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_SKIP_BENCH=1 OUT=$R timeout 330 scripts/gpu-check.sh run 2>&1 | tail -6
echo "suite OK lines: $(grep -cE '^\[       OK' $R/gpu-tests.log 2>/dev/null)"; grep -E "^\[  FAILED" $R/gpu-tests.log | head
D=$(mktemp -d)
export GRAPE_CACHE_DIR=$D/kc
F='Paths/GpuMatrixProduct.MatchesCpu/case30:Paths/GpuMatrixProduct.MatchesCpu/case31:Paths/GpuMatrixProduct.MatchesCpu/case32:Paths/GpuMatrixProduct.MatchesCpu/case33:GpuParity.TopK'
$C/grape_gpu_tests --gtest_filter="$F" > $R/san-warm.log 2>&1; echo "warm rc $?"
for tool in memcheck racecheck; do
  timeout 200 compute-sanitizer --tool $tool $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/san-$tool.log 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log | tail -1); $(grep -E '^\[  PASSED|^\[  FAILED' $R/san-$tool.log | head -3 | tr '\n' ' ')"
done
timeout 200 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8
