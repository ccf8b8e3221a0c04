#!/usr/bin/env bash
# GPU testing, in two halves (docs/gpu-testing.md):
#   scripts/gpu-check.sh build   on the developer machine: Release build of the CLI and the GPU tests,
#                                copied into build-carry/ (ignored by git, small enough to carry)
#   scripts/gpu-check.sh run     on the GPU machine, from the repository root: the GPU tests (every op
#                                and dtype, every example, the control-flow cases, all against the CPU
#                                reference), then the benchmarks with their PyTorch peers
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
case "${1:-}" in
  build)
    scripts/setup.sh
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-gpu --target grape grape_gpu_tests -j"$(nproc)"
    mkdir -p build-carry
    cp build-gpu/grape build-gpu/tests/gpu/grape_gpu_tests build-carry/
    ls -la build-carry
    ;;
  run)
    OUT_DIR=${OUT:-$ROOT/out}
    mkdir -p "$OUT_DIR"
    export GRAPE_SOURCE_DIR=$ROOT GRAPE_CACHE_DIR=${GRAPE_CACHE_DIR:-/tmp/grape-cache}
    nvidia-smi -L
    status=0
    build-carry/grape_gpu_tests --gtest_color=no 2>&1 | tee "$OUT_DIR/gpu-tests.log" | grep -E "^\[ *(FAILED|PASSED|SKIPPED)|Failure|error" || true
    grep -q "^\[  PASSED  \]" "$OUT_DIR/gpu-tests.log" && ! grep -q "^\[  FAILED  \]" "$OUT_DIR/gpu-tests.log" || status=1
    if [ "${GRAPE_SKIP_BENCH:-0}" != 1 ]; then
      bench/run.sh "$ROOT/build-carry/grape" "$OUT_DIR/bench" || status=1
    fi
    exit $status
    ;;
  *)
    echo "usage: scripts/gpu-check.sh build|run" >&2
    exit 2
    ;;
esac
