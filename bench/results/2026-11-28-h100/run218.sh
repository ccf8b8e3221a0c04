#!/usr/bin/env bash
# GPU run 218 (thirty-fourth session): gemv_mma's weight tile by bulk copies into shared memory
# (GRAPE_GEMV_TMA, default 1) so A's loads no longer queue behind the weight's, and each block
# prefetching the next product's weight into L2 (run 216's GEMV_PREFETCH, now in main). Correctness
# first (matrix-product, row-variant, parity, mono, timeline and plan GPU tests; memcheck and
# racecheck over the matrix-product cases), then TMA=0 vs 1: decode_step graph timelines with
# marks, latency in 3 alternating rounds, beam_search and generate.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
F='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.*:MonoExecutor.*:KernelTimeline.*:Plan/Executors.*'
GRAPE_CACHE_DIR=/tmp/gt timeout 300 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/run218-gpu-tests.log 2>&1
echo "gpu tests rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run218-gpu-tests.log; gzip -f $R/run218-gpu-tests.log
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gt timeout 150 $S --tool $tool --error-exitcode 9 $C/grape_gpu_tests --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*:RowVariants.*' > $R/run218-$tool.log 2>&1
  echo "$tool rc $? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/run218-$tool.log | tail -1) $(grep -E '^\[  (PASSED|FAILED) ' $R/run218-$tool.log | tr '\n' ' ')"
  gzip -f $R/run218-$tool.log
done
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for x in 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/t$x GRAPE_KERNEL_TIMELINE=$R/run218-timeline-tma$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== TMA=$x"; python3 scripts/timeline_summary.py $R/run218-timeline-tma$x.txt
done | tee $R/run218-marks.txt
for round in 1 2 3; do
  for x in 0 1; do
    GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step TMA=$x round $round: /"
  done
done | tee $R/run218-decode.txt
for x in 0 1 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search TMA=$x: /"
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate TMA=$x: /"
done | tee -a $R/run218-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
