#!/usr/bin/env bash
# GPU testing, in two halves (docs/gpu-testing.md):
#   scripts/gpu-check.sh build   on the developer machine: Release build of the CLI and the GPU tests,
#                                copied into build-carry/ (ignored by git, small enough to carry)
#   scripts/gpu-check.sh run     on the GPU machine, from the repository root: the GPU tests (every op
#                                and dtype, every example, the control-flow cases, all against the CPU
#                                reference), then the benchmarks with their PyTorch peers
#   scripts/gpu-check.sh sanitize [TOOL...]
#                                on the GPU machine: compute-sanitizer (TOOLs: memcheck racecheck
#                                initcheck, default all three) over every example at tiny sizes and
#                                every control-flow case, with --backend cuda on every executor that
#                                `grape run --help` lists (scripts/gpu_sanitize.py); fails on any report.
#                                Logs under $OUT/sanitize/ (else out/sanitize/). Environment:
#                                GRAPE_SANITIZE_JOBS (parallel runs, default 8), GRAPE_SANITIZE_FILTER
#                                (a substring of "program.entry", e.g. gpt2.beam_search),
#                                GRAPE_SANITIZE_EXECUTORS (e.g. eager,graph; default: the CLI's list)
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
    # GRAPE_GPU_TEST_SHARDS processes (default 4) share the GPU: most of a test's time is the CPU
    # reference and NVRTC, so 4 shards take about 110 s on an H100 against 230 s for one process.
    shards=${GRAPE_GPU_TEST_SHARDS:-4}
    ((shards >= 1)) || shards=1
    for ((i = 0; i < shards; ++i)); do
      GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i build-carry/grape_gpu_tests --gtest_color=no \
        >"$OUT_DIR/gpu-tests.$i.log" 2>&1 &
    done
    wait
    for ((i = 0; i < shards; ++i)); do
      cat "$OUT_DIR/gpu-tests.$i.log"
      grep -q "^\[  PASSED  \]" "$OUT_DIR/gpu-tests.$i.log" && ! grep -q "^\[  FAILED  \]" "$OUT_DIR/gpu-tests.$i.log" ||
        status=1
    done >"$OUT_DIR/gpu-tests.log"
    rm -f "$OUT_DIR"/gpu-tests.[0-9]*.log
    grep -E "^\[ *(FAILED|PASSED|SKIPPED)|Failure|error" "$OUT_DIR/gpu-tests.log" || true
    if [ "${GRAPE_SKIP_BENCH:-0}" != 1 ]; then
      bench/run.sh "$ROOT/build-carry/grape" "$OUT_DIR/bench" || status=1
    fi
    exit $status
    ;;
  sanitize)
    shift
    OUT_DIR=${OUT:-$ROOT/out}/sanitize
    export GRAPE_CACHE_DIR=${GRAPE_CACHE_DIR:-/tmp/grape-cache}
    sanitizer=$(command -v compute-sanitizer || true)
    for dir in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-*; do
      [[ -z $sanitizer && -n $dir && -x $dir/bin/compute-sanitizer ]] && sanitizer=$dir/bin/compute-sanitizer
    done
    if [[ -z $sanitizer ]]; then
      echo "gpu-check sanitize: compute-sanitizer not found (not on PATH, nor in \$CUDA_HOME/bin or /usr/local/cuda*/bin)" >&2
      exit 1
    fi
    if [[ ! -x build-carry/grape ]]; then
      echo "gpu-check sanitize: build-carry/grape is missing; run scripts/gpu-check.sh build first (and carry build-carry)" >&2
      exit 1
    fi
    tools=$(IFS=,; echo "${*:-memcheck,racecheck,initcheck}")
    mkdir -p "$OUT_DIR"
    nvidia-smi -L
    "$sanitizer" --version | tail -n 1
    python3 scripts/gpu_sanitize.py --grape "$ROOT/build-carry/grape" --out "$OUT_DIR" --sanitizer "$sanitizer" \
      --tools "$tools" --jobs "${GRAPE_SANITIZE_JOBS:-8}" --filter "${GRAPE_SANITIZE_FILTER:-}" \
      --executors "${GRAPE_SANITIZE_EXECUTORS:-}" 2>&1 | tee "$OUT_DIR/sanitize.log"
    exit "${PIPESTATUS[0]}"
    ;;
  *)
    echo "usage: scripts/gpu-check.sh build|run|sanitize [TOOL...]" >&2
    exit 2
    ;;
esac
