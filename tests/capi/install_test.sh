#!/bin/sh
# Installs the build tree into a temporary prefix and builds examples/c against the installed
# tree three ways: pkg-config (shared), pkg-config grape-static, and find_package(grape) from a
# separate CMake project (shared and static). Each program must run and print the batch.
#   install_test.sh BUILD_DIR SOURCE_DIR [FLAGS]
# FLAGS (e.g. -fsanitize=address,undefined) are added when compiling and linking the programs.
set -eu
build=$1
src=$2
flags=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log"
test -f "$prefix/include/grape.h"
pcdir=$(dirname "$(find "$prefix" -name grape.pc)")
libdir=$(dirname "$pcdir")
ls "$libdir"/libgrape.so "$libdir"/libgrape.a >/dev/null
export PKG_CONFIG_PATH="$pcdir"
model="$src/examples/mlp.grp"
cc=${CC:-cc}

check_output() {  # the program ran and printed every row
  grep -q "output f16\[4, 4\]" "$1" && grep -q "^row 3:" "$1" || { cat "$1"; exit 1; }
}

# pkg-config, shared library
$cc $flags -std=c99 -Wall -Wextra -Werror -pedantic "$src/examples/c/mlp_batch.c" $(pkg-config --cflags --libs grape) \
  -o "$tmp/mlp_shared"
LD_LIBRARY_PATH="$libdir" "$tmp/mlp_shared" "$model" >"$tmp/out_shared"
check_output "$tmp/out_shared"
# pkg-config, static library: no libgrape.so needed at run time
$cc $flags -std=c99 -Wall -Wextra -Werror -pedantic "$src/examples/c/mlp_batch.c" $(pkg-config --cflags --libs grape-static) \
  -o "$tmp/mlp_static"
if ldd "$tmp/mlp_static" | grep -q libgrape; then echo "static build depends on libgrape.so"; exit 1; fi
"$tmp/mlp_static" "$model" >"$tmp/out_static"
check_output "$tmp/out_static"
cmp "$tmp/out_shared" "$tmp/out_static"

# find_package(grape) from a separate project
for static in OFF ON; do
  cmake -S "$src/examples/c" -B "$tmp/cmake_$static" -DCMAKE_PREFIX_PATH="$prefix" -DGRAPE_EXAMPLE_STATIC=$static \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$tmp/cmake_$static.log"
  cmake --build "$tmp/cmake_$static" >>"$tmp/cmake_$static.log"
  "$tmp/cmake_$static/mlp_batch" "$model" >"$tmp/out_cmake_$static"
  check_output "$tmp/out_cmake_$static"
done

# The installed CLI runs.
"$prefix/bin/grape" --version | grep -q "^grape "
echo "install test: ok ($(head -1 "$tmp/out_shared"))"
