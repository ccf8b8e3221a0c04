#!/usr/bin/env bash
# The test command of Grape (CI runs exactly this through .ci/run).
#
#   1. scripts/setup.sh (installs only what is missing)
#   2. build-test/: the whole project with AddressSanitizer + UndefinedBehaviorSanitizer (g++),
#      LeakSanitizer on; ctest runs every test (GPU tests, label `gpu`, only when a GPU is present)
#   3. build-fuzz/: the libFuzzer targets with clang, and with them the libraries and the C API (so
#      the code is also compiled warning-free by a second compiler); each fuzzer runs briefly from a
#      copy of its seed corpus tests/fuzz/corpus/<name>/ and any crash, leak, timeout or sanitizer
#      report fails; build-clang-tests/ (configured, not built): every source no fuzzer builds (the
#      tests, the CLI, the C example) through clang -fsyntax-only
#   4. build-go/: every target (tests included) built optimized, -O2 with g++ and warnings as
#      errors, as the README's Release build is: some warnings (-Warray-bounds, -Wrestrict, ...)
#      appear only when optimizing. Its tests labelled nvrtc (NVRTC compiles) run there (the others
#      ran in 2.), and
#      3,000 random differential programs (2. runs 200 of them under the sanitizers); then
#      the Rust and Go bindings (cargo test --offline, go test and go test -race) against its
#      libgrape.so
#   5. a summary with the time of each phase; exit status non-zero if anything failed
#
# Every compile goes through ccache (GRAPE_CCACHE=0: not): the three builds recompile only what
# changed since the last run on this machine from the same checkout path (CI checks out at one
# path). CCACHE_BASEDIR lets the -O2 build hit from any path; the ASan and fuzz builds carry debug
# info, which records the build directory, so ccache keys them by it. A machine's first run
# compiles everything.
#
# Environment: GRAPE_JOBS (parallel jobs, default: number of cores), GRAPE_FUZZ_SECONDS (per
# fuzzer, default 20; 0 builds the fuzzers but does not run them), GRAPE_SKIP_BINDINGS=1 (skips
# the binding suites), GRAPE_SKIP_RELEASE_BUILD=1 (builds only libgrape.so in 4.).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${GRAPE_JOBS:-$(nproc)}
FUZZ_SECONDS=${GRAPE_FUZZ_SECONDS:-20}

# Sanitizer settings for everything run below. Leak detection is asked for explicitly, so that an
# inherited ASAN_OPTIONS=detect_leaks=0 cannot switch it off.
# intercept_tls_get_addr=0: GCC 12's sanitizer runtime misreads glibc 2.36's table of dynamic TLS
# blocks, and a process that loaded libnvrtc (whose TLS is dynamic: it is dlopen'ed) can then die at
# exit with "Tracer caught signal 11" / "LeakSanitizer has encountered a fatal error" after its test
# passed (LSAN_OPTIONS=verbosity=1 shows "DTLS 5 at 0x000000000bef-0x002000001cf1"). Whether it does
# depends on the stack layout, i.e. on the length of argv and of the paths: deterministic for one
# checkout path (CI's /check/work/main failed on every run), absent for another. Without the
# interception LeakSanitizer does not scan dlopen'ed libraries' thread-local blocks as roots; static
# TLS, stacks and globals are scanned as before.
export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1:intercept_tls_get_addr=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

START=$(date +%s)
SUMMARY=()
DETAILS=()   # lines printed after the summary: what a failed phase found (the end of a CI log is what is kept)
LAUNCHER=()  # the compiler launcher for CMake (ccache), set after setup
FAILED=0

banner() { printf '\n=== %s ===\n' "$*"; }
# phase NAME COMMAND...: runs a phase, records its time and result.
phase() {
  local name=$1
  shift
  banner "$name"
  local t0 rc
  t0=$(date +%s)
  "$@"
  rc=$?
  local dt=$(($(date +%s) - t0))
  if ((rc == 0)); then
    SUMMARY+=("$(printf '  %-34s %6ss  ok' "$name" "$dt")")
  else
    SUMMARY+=("$(printf '  %-34s %6ss  FAILED (exit %s)' "$name" "$dt" "$rc")")
    FAILED=1
  fi
  return $rc
}
skip() { SUMMARY+=("$(printf '  %-34s %6s   skipped (%s)' "$1" - "$2")"); }

finish() {
  banner "summary"
  printf '%s\n' "${SUMMARY[@]}"
  if ((${#LAUNCHER[@]})); then
    printf '  ccache: %s\n' "$(ccache --print-stats 2>/dev/null | awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {printf "%s %s  ", $1, $2}')"
  fi
  printf '  %-34s %6ss\n' "total" "$(($(date +%s) - START))"
  if ((${#DETAILS[@]})); then
    banner "what failed"
    printf '%s\n' "${DETAILS[@]}"
  fi
  if ((FAILED)); then
    echo "TESTS FAILED"
    exit 1
  fi
  echo "all tests passed"
  exit 0
}

# --- 1. setup ------------------------------------------------------------------------------------
phase "setup" scripts/setup.sh || finish
PYTHON=$(command -v python3)

# ccache: PCH-using sources are cacheable with pch_defines,time_macros (CMake includes the
# precompiled header with -include); include_file_* let a fresh clone's new files hit. Three build
# trees of about 1.5 GB of objects each: 8 GB keeps them all.
if [[ ${GRAPE_CCACHE:-1} != 0 ]] && command -v ccache >/dev/null 2>&1; then
  export CCACHE_BASEDIR="$ROOT" CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  ccache --zero-stats >/dev/null 2>&1 || true
fi

# Ninja for a new build tree: it starts the test binaries' compiles while other targets still
# build, where make waits for the precompiled header's owner target (ASan build 170 s against
# 206 s on 2 cores). A tree configured before keeps the generator it has; without ninja, make.
generator() { [[ -f $1/CMakeCache.txt ]] || ! command -v ninja >/dev/null 2>&1 || echo "-GNinja"; }

# --- 2. sanitizer build and ctest ----------------------------------------------------------------
# -O0 and line tables only: with the sanitizers, -O2 -g takes 2.5 to 6 times longer to compile
# (frontend/expr.cpp: 57 s at -O2 -g, 7 s at -O0 -g1), far more than the tests gain in speed.
DEBUG_FLAGS="-O0 -g1"
build_asan() {
  mkdir -p build-test
  cmake -S . -B build-test $(generator build-test) "${LAUNCHER[@]}" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="$DEBUG_FLAGS" \
    -DCMAKE_CXX_FLAGS_DEBUG="$DEBUG_FLAGS" -DGRAPE_SANITIZE=ON -DGRAPE_TESTS=ON -DPython3_EXECUTABLE="$PYTHON" >build-test/configure.log 2>&1 ||
    { cat build-test/configure.log; return 1; }
  cmake --build build-test -j"$JOBS"
}

# LeakSanitizer silently does nothing in some environments (under ptrace, for one): make sure a
# leak in a program built like the tests is really reported.
check_lsan() {
  local dir
  dir=$(mktemp -d)
  printf '#include <cstdlib>\nvoid* volatile sink;\nint main() { sink = std::malloc(77); sink = nullptr; return 0; }\n' \
    >"$dir/leak.cpp"
  local cxx
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' build-test/CMakeCache.txt)
  "${cxx:-c++}" -fsanitize=address,undefined -g "$dir/leak.cpp" -o "$dir/leak" || { rm -rf "$dir"; return 1; }
  local out
  out=$("$dir/leak" 2>&1)
  local rc=$?
  rm -rf "$dir"
  if ((rc != 0)) && grep -q 'detected memory leaks' <<<"$out"; then
    echo "LeakSanitizer is active"
    return 0
  fi
  echo "LeakSanitizer did not report a deliberate leak (exit $rc):"
  echo "$out"
  return 1
}

# Tests labelled nvrtc (compile.examples, compile.probes, the CodegenNvrtc tests, test_cli's
# `grape compile` tests) run in phase 4's optimized build instead (NVRTC gains nothing from the
# sanitizers and is 3x slower under ASan's allocator).
run_ctest() {
  local args=(--test-dir build-test --output-on-failure -j"$JOBS" --timeout 600 --no-tests=error)
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    echo "GPU found: running the GPU tests (label gpu) too"
    args+=(-LE nvrtc)
  else
    echo "skipping GPU tests: no GPU on this machine"
    args+=(-LE 'gpu|nvrtc')
  fi
  # 200 of the 1,000 random differential programs under the sanitizers (44 times slower there:
  # 154 s of CPU for all 1,000); phase 4 runs 3,000 in the optimized build.
  GRAPE_DIFFTEST_SEEDS=200 ctest "${args[@]}"
}

if phase "build (ASan+UBSan, build-test/)" build_asan; then
  phase "LeakSanitizer check" check_lsan
  phase "ctest (ASan+UBSan+LSan)" run_ctest
else
  skip "ctest (ASan+UBSan+LSan)" "build failed"
fi

# --- 3. fuzzers ----------------------------------------------------------------------------------
# Fuzzers want optimized code, but a short run gains less than -O2 -g costs to compile.
FUZZ_FLAGS="-O1 -gline-tables-only"
# GNU ar: capi/merge_archive.cmake uses an MRI script (OPEN) that llvm-ar 14, clang's default, rejects.
build_fuzz() {
  mkdir -p build-fuzz
  cmake -S . -B build-fuzz $(generator build-fuzz) "${LAUNCHER[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$FUZZ_FLAGS" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$FUZZ_FLAGS" -DGRAPE_FUZZ=ON -DGRAPE_TESTS=OFF \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_AR="$(command -v ar)" >build-fuzz/configure.log 2>&1 ||
    { cat build-fuzz/configure.log; return 1; }
  # Only the fuzzers and what they link: the CLI's sources get clang's front end in
  # clang_tests_syntax below, at a third of what compiling them costs here (about 25 s on 2 cores).
  local targets=() src
  for src in tests/fuzz/fuzz_*.cpp; do targets+=("$(basename "$src" .cpp)"); done
  cmake --build build-fuzz -j"$JOBS" --target "${targets[@]}"
}

# The program fuzzer (fuzz_program) also starts from every program in the repository: the
# examples, the golden catalogue and the control-flow cases (copied into corpus DIR).
program_seeds() {
  local f
  for f in examples/*.grp tests/golden/*/*.grp tests/difftest/cases/*.grp; do
    cp "$f" "$1/$(tr / _ <<<"$f")"
  done
}

# run_fuzzer BINARY: FUZZ_SECONDS from a temporary copy of the seed corpus (the repository is not
# written); crashes are kept in build-fuzz/artifacts/<name>/.
run_fuzzer() {
  local bin=$1 name
  name=$(basename "$bin")
  local seeds="tests/fuzz/corpus/${name#fuzz_}"
  local corpus art log
  corpus=$(mktemp -d)
  art="build-fuzz/artifacts/$name"
  log="build-fuzz/$name.log"
  mkdir -p "$art"
  : >"$art/.started"  # what is newer than this, this run found
  if [[ -d $seeds ]]; then cp -r "$seeds"/. "$corpus"/; else echo "note: no seed corpus $seeds"; fi
  [[ $name == fuzz_program ]] && program_seeds "$corpus"
  local flags=()  # tests/fuzz/<name>.flags: the fuzzer's own libFuzzer flags (later flags win)
  [[ -f tests/fuzz/$name.flags ]] && read -ra flags <"tests/fuzz/$name.flags"
  "$bin" -max_total_time="$FUZZ_SECONDS" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "${flags[@]}" "$corpus" >"$log" 2>&1
  local rc=$?
  rm -rf "$corpus"
  grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added)' "$log" | tr '\n' ' '
  echo
  if ((rc != 0)); then
    echo "$name FAILED (exit $rc); the end of $log:"
    tail -n 60 "$log"
    echo "reproduce: $bin $art/<crash-file>"
    ls "$art"
  fi
  return $rc
}

# fuzz_finding_details NAME: the finding of fuzzer NAME for the end of the log: the sanitizer's or
# libFuzzer's report lines and each crash input in base64, so that a CI log alone reproduces it
# (base64 -d >crash; build-fuzz/tests/fuzz/NAME crash).
fuzz_finding_details() {
  local name=$1 f
  DETAILS+=("$name:")
  while IFS= read -r f; do DETAILS+=("  $f"); done < <(grep -E 'ERROR:|SUMMARY:|runtime error:|==[0-9]+==| finding: ' \
    "build-fuzz/$name.log" | head -n 8)
  local art="build-fuzz/artifacts/$name"
  for f in $(find "$art" -maxdepth 1 -type f ! -name '.*' -newer "$art/.started" | sort); do
    DETAILS+=("  input $(basename "$f") ($(stat -c %s "$f") bytes), base64:")
    DETAILS+=("$(head -c 16384 "$f" | base64 -w 100 | sed 's/^/    /')")
  done
}

# Every fuzzer, JOBS at a time (each uses one core); their reports in order once all have ended.
run_fuzzers() {
  local bins=() bin i rc=0 out
  for bin in build-fuzz/tests/fuzz/fuzz_*; do
    [[ -x $bin && -f $bin ]] && bins+=("$bin")
  done
  out=$(mktemp -d)
  for i in "${!bins[@]}"; do
    while (($(jobs -rp | wc -l) >= JOBS)); do wait -n; done
    (run_fuzzer "${bins[$i]}" >"$out/$i.log" 2>&1; echo $? >"$out/$i.rc") &
  done
  wait
  for i in "${!bins[@]}"; do
    local r
    r=$(cat "$out/$i.rc" 2>/dev/null || echo 1)
    echo "--- $(basename "${bins[$i]}"): $( ((r == 0)) && echo ok || echo "FAILED (exit $r)")"
    cat "$out/$i.log"
    if ((r != 0)); then
      rc=1
      fuzz_finding_details "$(basename "${bins[$i]}")"
    fi
  done
  rm -rf "$out"
  return $rc
}

if phase "build (clang, libFuzzer, build-fuzz/)" build_fuzz; then
  if ((FUZZ_SECONDS > 0)); then
    phase "fuzzers, ${FUZZ_SECONDS}s each, $JOBS at a time" run_fuzzers
  else
    skip "fuzzers" "GRAPE_FUZZ_SECONDS=0"
  fi
else
  skip "fuzzers" "build failed"
fi

# The sources the fuzz build does not compile (the tests: it has GRAPE_TESTS=OFF; the CLI; the C
# example) with clang too: front-end checks with the flags CMake gives them, from a configured (not
# built) tree (no precompiled header: none is built).
clang_tests_syntax() {
  mkdir -p build-clang-tests
  cmake -S . -B build-clang-tests $(generator build-clang-tests) -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DGRAPE_TESTS=ON -DCMAKE_EXPORT_COMPILE_COMMANDS=ON -DCMAKE_DISABLE_PRECOMPILE_HEADERS=ON -DPython3_EXECUTABLE="$PYTHON" \
    >build-clang-tests/configure.log 2>&1 || { cat build-clang-tests/configure.log; return 1; }
  "$PYTHON" scripts/clang_syntax_check.py build-clang-tests . "$JOBS"
}
phase "clang -fsyntax-only: tests, CLI (build-clang-tests/)" clang_tests_syntax

# --- 4. optimized build, and the bindings against it --------------------------------------------
# Every target at -O2 with -Werror (CMakeLists.txt), in build-go/, where the Go package's cgo flags
# point; the Rust and Go suites then run against its unsanitized libgrape.so. One build serves both
# (a separate -O0 library build for the bindings cost another minute). GRAPE_SKIP_RELEASE_BUILD=1
# builds only the library.
build_o2() {
  mkdir -p build-go
  cmake -S . -B build-go $(generator build-go) "${LAUNCHER[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DGRAPE_TESTS=ON -DPython3_EXECUTABLE="$PYTHON" >build-go/configure.log 2>&1 ||
    { cat build-go/configure.log; return 1; }
  if [ "${GRAPE_SKIP_RELEASE_BUILD:-0}" = 1 ]; then
    cmake --build build-go --target grape_shared -j"$JOBS"
  else
    cmake --build build-go -j"$JOBS"
  fi
}
if phase "build -O2, all targets (build-go/)" build_o2; then
  if [ "${GRAPE_SKIP_RELEASE_BUILD:-0}" = 1 ]; then
    skip "ctest -L nvrtc (build-go/)" "GRAPE_SKIP_RELEASE_BUILD=1"
  else
    phase "ctest -L nvrtc: NVRTC compiles (build-go/)" \
      ctest --test-dir build-go --output-on-failure -j"$JOBS" --timeout 600 --no-tests=error -L nvrtc
    phase "ctest: 3000 random differential programs (build-go/)" \
      env GRAPE_DIFFTEST_SEEDS=3000 ctest --test-dir build-go --output-on-failure -j"$JOBS" --timeout 600 \
      --no-tests=error -R '^Shards/RandomPrograms'
  fi
  if [ "${GRAPE_SKIP_BINDINGS:-0}" = 1 ]; then
    skip "bindings (Rust, Go)" "GRAPE_SKIP_BINDINGS=1"
  else
    phase "bindings/rust (cargo test --offline)" env GRAPE_LIB_DIR="$ROOT/build-go/lib" bindings/rust/test.sh
    phase "bindings/go (go test, -race)" env JOBS="$JOBS" bindings/go/test.sh
  fi
fi

finish
