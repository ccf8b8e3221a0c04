#!/usr/bin/env bash
# Probe: cold builds of one program under several environments, alternating, each truly cold
# (an empty CUDA_CACHE_PATH, which NVRTC 13's own cache follows, and an empty Grape kernel cache),
# with GRAPE_BUILD_TRACE per build. Prints wall/user/sys and, per build, the sum of the compiles'
# durations (against the sum one at a time, it shows how much the threads slow each other).
#
#   scripts/probes/cold_build_ab.sh GRAPE OUTDIR "GRAPE_NVRTC_PCH=0" "GRAPE_NVRTC_PCH=1" [-- compile args]
#
# Default compile args: examples/gpt2.grp --arch sm_90 (issue 7's cold-build target, <= 10 s on the
# 16-core GPU machine). Two rounds of every environment.
set -euo pipefail
grape=$1 out=$2
shift 2
envs=()
while (($#)) && [[ $1 != -- ]]; do envs+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
args=("$@")
((${#args[@]})) || args=(examples/gpt2.grp --arch sm_90)
mkdir -p "$out"
for round in 1 2; do
  for e in "${envs[@]}"; do
    tag=$(echo "$e" | tr -c 'A-Za-z0-9=' '_')-r$round
    trace=$out/build-trace-$tag.txt
    rm -f "$trace"
    ccp=$(mktemp -d) gcd=$(mktemp -d)
    /usr/bin/time -o "$out/time.txt" -f "%e %U %S" env $e CUDA_CACHE_PATH="$ccp" GRAPE_CACHE_DIR="$gcd" \
      GRAPE_BUILD_TRACE="$trace" "$grape" compile "${args[@]}" >/dev/null 2>&1
    read -r wall user sys <"$out/time.txt"
    sum=$(awk '{s += $2} END {printf "%.1f", s}' "$trace")
    echo "$e round $round: ${wall} s wall, ${user} s user, ${sys} s sys; compiles' durations sum ${sum} s"
    rm -rf "$ccp" "$gcd"
  done
done
