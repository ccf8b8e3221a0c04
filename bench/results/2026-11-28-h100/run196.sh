#!/usr/bin/env bash
# GPU run 196 (thirty-first session): gemv_mma.cuh's cluster splits capped at 8 (default), 4, 2, 1
# (GRAPE_GEMV_MMA_SPLITS) against gemv.cuh's FMA loop (GRAPE_GEMV_MMA=0): decode_step graph, two
# rounds alternating; beam_search / generate for the FMA loop and the default; the matrix-product
# GPU tests again (the final cluster barrier now relaxed).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
F='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.Gpt2ForwardAndDecode:MonoExecutor.Gpt2DecodeSteps'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 250 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
wait
cat $D/gt*.log > $R/run196-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run196-gpu-tests.log
grep -B2 -A12 "Failure" $R/run196-gpu-tests.log | head -40
gzip -f $R/run196-gpu-tests.log
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
V=("GRAPE_GEMV_MMA=0" "GRAPE_GEMV_MMA=1 GRAPE_GEMV_MMA_SPLITS=8" "GRAPE_GEMV_MMA=1 GRAPE_GEMV_MMA_SPLITS=4" "GRAPE_GEMV_MMA=1 GRAPE_GEMV_MMA_SPLITS=2" "GRAPE_GEMV_MMA=1 GRAPE_GEMV_MMA_SPLITS=1")
for i in 0 1 2 3 4; do
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec$i > /dev/null
done
python3 -c "
import numpy as np
a = np.load('$D/dec0/out0.npy').astype(np.float64)
for i in range(1, 5):
  b = np.load('$D/dec%d/out0.npy' % i); print('variant', i, 'max|d| to FMA', float(np.abs(a - b).max()), 'argmax equal', (a.argmax(-1) == b.argmax(-1)).all())"
for round in 1 2; do
  for i in 0 1 2 3 4; do
    env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step ${V[$i]} round $round: /"
  done
done
for i in 0 1; do
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search ${V[$i]}: /"
  env ${V[$i]} GRAPE_CACHE_DIR=$D/k$i $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate ${V[$i]}: /"
done
echo "total $(( $(date +%s) - t0 )) s"
