#!/bin/sh
# CI check that every CUDA measurement probe under scripts/probes/ (subfolders too) still compiles
# for the lent GPUs (sm_90), warnings as errors: they are records that later sessions rerun and
# build on (decode_two_stage.cu is issue 7's design probe), and two of them share headers
# (decode_reference.cuh, probe_sync.cuh). Compile only, no -O3: nothing runs (CI has no GPU).
# Exit 77 (skipped) when there is no nvcc.
# usage: compile_probes.sh   (run in the source root)
nvcc=${CUDACXX:-$(command -v nvcc || true)}
[ -n "$nvcc" ] || [ ! -x /usr/local/cuda/bin/nvcc ] || nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
  echo "skipped: no nvcc (set CUDACXX or put the CUDA toolkit's bin on PATH)"
  exit 77
fi
status=0
for f in $(find scripts/probes -name '*.cu' | sort); do
  start=$(date +%s)
  if out=$("$nvcc" -std=c++17 -arch=sm_90 -Werror all-warnings -Xcompiler -Wall,-Wextra -c -o /dev/null "$f" 2>&1); then
    echo "ok   $f ($(( $(date +%s) - start ))s)"
  else
    printf 'FAIL %s\n%s\n' "$f" "$out"
    status=1
  fi
done
exit $status
