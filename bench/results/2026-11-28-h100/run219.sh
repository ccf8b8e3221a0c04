#!/usr/bin/env bash
# GPU run 219 (thirty-fourth session; run 218 as planned ran out of its 600 s in the tests: the
# whole GpuParity suite in one process takes 240 s): the tests it did not reach in 4 shards, then
# its measurements: gemv_mma's weight tile by bulk copies into shared memory
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
F='RowVariants.*:Paths/GpuMatrixProduct.*:Plan/Executors.*:GraphExecutor.*'
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/run219-gpu-tests-$i.log 2>&1 & done; wait
echo "gpu tests $(( $(date +%s) - t0 )) s"; cat $R/run219-gpu-tests-*.log | grep -E "^\[  (PASSED|FAILED) |^\[  FAILED"; gzip -f $R/run219-gpu-tests-*.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for x in 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/t$x GRAPE_KERNEL_TIMELINE=$R/run219-timeline-tma$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== TMA=$x"; python3 scripts/timeline_summary.py $R/run219-timeline-tma$x.txt
done | tee $R/run219-marks.txt
for round in 1 2; do
  for x in 0 1; do
    GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step TMA=$x round $round: /"
  done
done | tee $R/run219-decode.txt
for x in 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search TMA=$x: /"
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate TMA=$x: /"
done | tee -a $R/run219-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
