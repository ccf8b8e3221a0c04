#!/bin/sh
# CI check that every kernel Grape generates for the examples (and bench/ programs) compiles cleanly (no errors, no
# warnings) with NVRTC, at tiny sizes (the kernels' code does not depend on the sizes' magnitude).
# Exit 77 (skipped) when no NVRTC library can be loaded.
# usage: compile_examples.sh GRAPE   (run in the source root)
# Targets: $GRAPE_NVRTC_ARCHS (comma-separated), default compute_80 alone: PTX for the oldest
# supported arch, the strictest (a feature it lacks fails there). PTX is NVRTC's whole front end
# with its warnings; ptxas (cubin) is 60% of the time and the GPU tests run it for sm_90, the lent
# H100/H200, on every kernel they launch. GRAPE_NVRTC_ARCHS=sm_80,sm_90 builds cubins for both.
grape=$1
archs=${GRAPE_NVRTC_ARCHS:-compute_80}
status=0
compile() {
  start=$(date +%s)
  out=$("$grape" compile "$@" --arch "$archs" 2>&1)
  rc=$?
  printf '%s\n(%ss)\n' "$out" "$(( $(date +%s) - start ))"
  case $out in *"cannot compile kernels:"*) echo "skipped: NVRTC cannot be loaded"; exit 77 ;; esac
  [ $rc -eq 0 ] || status=1
}
compile examples/mlp.grp
compile examples/bert.grp -D L=2 -D H=64 -D NH=4 -D I=256 -D V=128 -D P=64
compile examples/gpt2.grp -D L=2 -D E=64 -D NH=4 -D V=128 -D P=64 -D T=64 -D N=8
# The benchmark programs (their sequences and row kernels at the real sizes).
compile bench/overhead/overhead.grp
compile bench/rows/log_softmax.grp
compile bench/rows/argmax.grp
exit $status
