#!/usr/bin/env bash
# Runs the libFuzzer targets longer than scripts/test.sh does.
#
#   scripts/fuzz.sh [SECONDS] [NAME...]     e.g. scripts/fuzz.sh 600 fuzz_parser
#
# SECONDS per fuzzer (default 300); NAMEs pick fuzzers (default: every build-fuzz/tests/fuzz/fuzz_*).
# Builds build-fuzz/ with clang (libFuzzer + ASan + UBSan) first. Each fuzzer works on
# build-fuzz/corpus/<name>/, seeded from tests/fuzz/corpus/<name without fuzz_>/ and kept between
# runs (the repository is not written; copy interesting inputs into tests/fuzz/corpus/ by hand).
# Crashes go to build-fuzz/artifacts/<name>/; the exit status is non-zero if any fuzzer failed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=${1:-300}
shift $(($# > 0 ? 1 : 0))
JOBS=${GRAPE_JOBS:-$(nproc)}
if ! [[ $SECONDS_EACH =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS] [NAME...]" >&2
  exit 2
fi

export ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

scripts/setup.sh || exit 1
mkdir -p build-fuzz
# The same build as scripts/test.sh's (shared build-fuzz/).
FUZZ_FLAGS="-O1 -gline-tables-only"
# GNU ar: capi/merge_archive.cmake uses an MRI script (OPEN) that llvm-ar 14, clang's default, rejects.
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$FUZZ_FLAGS" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$FUZZ_FLAGS" -DGRAPE_FUZZ=ON -DGRAPE_TESTS=OFF \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_AR="$(command -v ar)" >build-fuzz/configure.log 2>&1 ||
  { cat build-fuzz/configure.log; exit 1; }
cmake --build build-fuzz -j"$JOBS" || exit 1

if (($# == 0)); then
  set -- build-fuzz/tests/fuzz/fuzz_*
fi

failed=()
for arg in "$@"; do
  name=$(basename "$arg")
  bin=build-fuzz/tests/fuzz/$name
  if [[ ! -x $bin || ! -f $bin ]]; then
    echo "no fuzzer $bin" >&2
    failed+=("$name")
    continue
  fi
  corpus=build-fuzz/corpus/$name
  art=build-fuzz/artifacts/$name
  seeds=tests/fuzz/corpus/${name#fuzz_}
  mkdir -p "$corpus" "$art"
  [[ -d $seeds ]] && cp -r "$seeds"/. "$corpus"/
  # The program fuzzer also starts from every program in the repository.
  if [[ $name == fuzz_program ]]; then
    for f in examples/*.grp tests/golden/*/*.grp tests/difftest/cases/*.grp; do
      cp "$f" "$corpus/$(tr / _ <<<"$f")"
    done
  fi
  flags=()  # tests/fuzz/<name>.flags: the fuzzer's own libFuzzer flags (later flags win)
  [[ -f tests/fuzz/$name.flags ]] && read -ra flags <"tests/fuzz/$name.flags"
  echo "=== $name: ${SECONDS_EACH}s, corpus $corpus ($(find "$corpus" -type f | wc -l) inputs) ==="
  log=build-fuzz/$name.log
  "$bin" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$art/" "${flags[@]}" "$corpus" >"$log" 2>&1
  rc=$?
  grep -E '^(Done|stat::number_of_executed_units|stat::new_units_added|stat::peak_rss_mb)' "$log"
  if ((rc != 0)); then
    echo "$name FAILED (exit $rc); the end of $log:"
    tail -n 60 "$log"
    echo "reproduce: $bin $art/<crash-file>"
    ls "$art"
    failed+=("$name")
  fi
done

if ((${#failed[@]})); then
  echo "FAILED: ${failed[*]}"
  exit 1
fi
echo "all fuzzers ran ${SECONDS_EACH}s without a finding"
