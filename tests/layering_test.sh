#!/bin/sh
# The folders' layering (architecture.md, "Where the code goes next"): each folder includes only
# itself and the folders below it. base/ (error.h, half.h) is below everything; scheduler/ plans
# and includes nothing from jit/; jit/ (code generation, NVRTC, the cache, the driver) includes
# nothing from runtime/ or frontend/. (cli/ includes only grape.h: capi.cli_includes_only_grape_h.)
#
#   tests/layering_test.sh SOURCE_DIR
set -u
root=${1:?usage: layering_test.sh SOURCE_DIR}
cd "$root" || exit 2
bad=""
# check FOLDER ALLOWED...: every `#include "X/..."` in FOLDER names X = FOLDER or one of ALLOWED.
check() {
  folder=$1
  shift
  hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "$folder" \
    --include='*.h' --include='*.cpp' --include='*.cuh' --include='*.c')
  for dep in $(printf '%s\n' "$hits" | sed -nE 's/.*#[[:space:]]*include[[:space:]]+"([a-z_]+)\/.*/\1/p' | sort -u); do
    case " $folder $* " in
      *" $dep "*) ;;
      *) bad="$bad$(printf '%s\n' "$hits" | grep "\"$dep/" | sed "s|^|$folder/ includes $dep/: |")
" ;;
    esac
  done
}
check base
check lang base
check ir base lang
check frontend base lang ir
check scheduler base lang ir
check jit base lang ir scheduler
check runtime base lang ir frontend scheduler jit
check capi base lang ir frontend scheduler jit runtime
if [ -n "$bad" ]; then
  printf '%s' "$bad"
  echo "layering: FAILED (each folder may include only the folders below it; tests/layering_test.sh)"
  exit 1
fi
echo "layering: ok (base < lang < ir < frontend, scheduler < jit < runtime < capi)"
