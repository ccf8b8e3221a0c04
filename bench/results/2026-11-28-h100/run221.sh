#!/usr/bin/env bash
# GPU run 221 (prepared in the thirty-fourth session, run in the thirty-fifth: it compiles, every gpt2.grp kernel through NVRTC for sm_80/sm_90, and the CPU codegen tests pass; branch
# experiment/gemv-weight-tensor-map): gemv_mma's weight tile by bulk *tensor* copies (one
# cp.async.bulk.tensor.2d per 64 weight rows, a CUtensorMap per GEMV from the executor, 128-byte
# swizzle) instead of run 218's one copy per 128-byte row, whose issue delayed each block's wait.
# Correctness first (4 shards: matrix products, row variants, GPT-2 parity, mono, plan/graph;
# memcheck and racecheck over the matrix-product cases, 2 shards each), then GRAPE_GEMV_TMA=0 vs 1:
# decode_step graph timelines with marks, latency in 2 alternating rounds, beam_search, generate.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
F='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.Gpt2*:GpuParity.Sibling*:MonoExecutor.*:Plan/Executors.*:KernelTimeline.*'
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 180 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/run221-gpu-tests-$i.log 2>&1 & done; wait
echo "gpu tests $(( $(date +%s) - t0 )) s"; cat $R/run221-gpu-tests-*.log | grep -E "^\[  (PASSED|FAILED) |^\[  FAILED"; gzip -f $R/run221-gpu-tests-*.log
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  for i in 0 1; do GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 100 $S --tool $tool $C/grape_gpu_tests --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*:RowVariants.*' > $R/run221-$tool-$i.log 2>&1 & done; wait
  echo "$tool $(( $(date +%s) - t0 )) s: $(cat $R/run221-$tool-*.log | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tr '\n' ' ') $(cat $R/run221-$tool-*.log | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' ')"
  gzip -f $R/run221-$tool-*.log
done
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for x in 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/t$x GRAPE_KERNEL_TIMELINE=$R/run221-timeline-tma$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== TMA=$x"; python3 scripts/timeline_summary.py $R/run221-timeline-tma$x.txt
done | tee $R/run221-marks.txt
for round in 1 2; do
  for x in 0 1; do
    GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step TMA=$x round $round: /"
  done
done | tee $R/run221-decode.txt
for x in 0 1; do
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search TMA=$x: /"
  GRAPE_GEMV_TMA=$x GRAPE_CACHE_DIR=$D/k$x timeout 90 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate TMA=$x: /"
done | tee -a $R/run221-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
