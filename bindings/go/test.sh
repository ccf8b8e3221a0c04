#!/usr/bin/env bash
# Builds libgrape (Release, target grape_shared) in <repo>/build-go, the directory the cgo flags
# of this package point at, then vets and tests the Go bindings (the concurrency tests also under
# the race detector) and runs the example. Offline: the module has no dependencies.
#
#   bindings/go/test.sh                 # from anywhere
#   GRAPE_LIB_DIR=/x/lib test.sh        # use that libgrape.so instead of building one
#   JOBS=2 bindings/go/test.sh          # parallel jobs for the C++ build (default: nproc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$repo/build-go"

if ! command -v go >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y golang-go || { $sudo apt-get update && $sudo apt-get install -y golang-go; }
fi

export GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1
if [ -n "${GRAPE_LIB_DIR:-}" ]; then
  if [ ! -f "$GRAPE_LIB_DIR/libgrape.so" ]; then
    echo "bindings/go: GRAPE_LIB_DIR is set to $GRAPE_LIB_DIR but it holds no libgrape.so" >&2
    exit 1
  fi
  lib="$(cd "$GRAPE_LIB_DIR" && pwd)"
  # cgo puts $CGO_LDFLAGS before the package's own flags (cgo_local.go: -L and rpath of
  # <repo>/build-go/lib), so this directory wins at link time and at run time (the first RUNPATH
  # entry), whether or not build-go holds a library too.
  export CGO_LDFLAGS="-L$lib -Wl,-rpath,$lib${CGO_LDFLAGS:+ $CGO_LDFLAGS}"
else
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPE_TESTS=OFF
  fi
  # Incremental: a no-op when libgrape.so is up to date.
  cmake --build "$build" --target grape_shared -j "${JOBS:-$(nproc)}"
  lib="$build/lib"
fi

# Go's build cache does not see changes to C headers outside the package directory: after a change
# to capi/include/grape.h (a field added to an options struct), a checkout at the same path reused
# the package compiled against the old header, and the library read past the Go-allocated struct
# (CI crashed 7 ms into the tests, in grp_model_load_file, for two submissions). The header's hash
# in CGO_CFLAGS is part of the cache key, so any change to it recompiles the package.
header_hash=$(sha256sum "$repo/capi/include/grape.h" | cut -c1-16)
export CGO_CFLAGS="${CGO_CFLAGS:--g -O2} -DGRAPE_GO_HEADER_SHA256_${header_hash}"
cd "$here"
echo "bindings/go: $(go version), libgrape from $lib"
go vet ./...
# A crashed test binary prints its goroutines after the reason, and CI shows only the end of the
# log: on failure, the first lines (the reason) are repeated last.
go_test() {
  local log rc=0
  log="$(mktemp)"
  go test -count=1 "$@" ./... >"$log" 2>&1 || rc=$?
  cat "$log"
  if ((rc != 0)); then
    echo "bindings/go: 'go test $*' failed; its first lines:"
    head -n 25 "$log" | sed 's/^/  | /'
  fi
  rm -f "$log"
  return "$rc"
}
go_test
go_test -race # the whole suite, TestConcurrentSessions above all
go run ./cmd/grape-run -model "$repo/examples/mlp.grp" -D D=32 -D H=64 -D C=10 -dim B=2
