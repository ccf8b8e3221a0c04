#!/usr/bin/env bash
# Builds libgrape (Release, target grape_shared) in <repo>/build-rust and runs the Rust
# bindings' tests, lints and example against it. Offline: the crate has no dependencies.
#
#   bindings/rust/test.sh            # from anywhere
#   GRAPE_LIB_DIR=/x/lib test.sh     # use that libgrape.so instead of building one
#   GRAPE_RUST_BUILD_DIR=/tmp/b test.sh   # build libgrape elsewhere (default <repo>/build-rust)
#   JOBS=2 test.sh                   # parallel jobs for the C++ build (default: nproc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

if [ -z "${GRAPE_LIB_DIR:-}" ]; then
  build="${GRAPE_RUST_BUILD_DIR:-$repo/build-rust}"
  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRAPE_TESTS=OFF
  fi
  # Incremental: a no-op when libgrape.so is up to date.
  cmake --build "$build" --target grape_shared -j "${JOBS:-$(nproc)}"
  export GRAPE_LIB_DIR="$build/lib"
fi
echo "bindings/rust: using libgrape from $GRAPE_LIB_DIR"

cd "$here"
cargo test --offline
if cargo clippy --version >/dev/null 2>&1; then
  cargo clippy --offline --all-targets -- -D warnings
fi
cargo run --offline --example run_model
