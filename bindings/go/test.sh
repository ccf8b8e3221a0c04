#!/usr/bin/env bash
# Builds libgrape (Release, target grape_shared) in <repo>/build-go, the directory the cgo flags
# of this package point at, then vets and tests the Go bindings (the concurrency tests also under
# the race detector) and runs the example. Offline: the module has no dependencies.
#
#   bindings/go/test.sh          # from anywhere
#   JOBS=2 bindings/go/test.sh   # parallel jobs for the C++ build (default: nproc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="$repo/build-go"

if ! command -v go >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get install -y golang-go || { $sudo apt-get update && $sudo apt-get install -y golang-go; }
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPE_TESTS=OFF
fi
# Incremental: a no-op when libgrape.so is up to date.
cmake --build "$build" --target grape_shared -j "${JOBS:-$(nproc)}"

export GOFLAGS=-mod=mod GOPROXY=off CGO_ENABLED=1
cd "$here"
echo "bindings/go: $(go version), libgrape from $build/lib"
go vet ./...
go test -count=1 ./...
go test -count=1 -race ./... # the whole suite, TestConcurrentSessions above all
go run ./cmd/grape-run -model "$repo/examples/mlp.grp" -D D=32 -D H=64 -D C=10 -dim B=2
