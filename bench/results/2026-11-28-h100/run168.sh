#!/usr/bin/env bash
# GPU run 168: programmatic dependent launch triggers (GRAPE_GEMV_PDL, one binary, separate kernel caches):
# 0 as before; 2 GEMVs request their weight before the wait and trigger once it is read (run 167:
# decode 0.508 -> 0.463 ms); 3 also the decode attention and lm_head trigger. decode_step graph
# (outputs compared, three rounds alternating), beam_search graph (tokens compared), GPT-2 tests
# and row variants under mode 3.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/prompt.npy', np.random.default_rng(0).integers(0, 50256, (1, 64)).astype(np.int32))"
export GRAPE_COMPILE_WORKER=$C/grape
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
for m in 0 2 3; do
  GRAPE_GEMV_PDL=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --output $D/dec$m > /dev/null
  GRAPE_GEMV_PDL=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --output $D/beam$m > /dev/null
done
python3 -c "
import numpy as np
for m in (2, 3):
  a=np.load('$D/dec0/out0.npy'); b=np.load('$D/dec%d/out0.npy'%m); print('decode mode %d == mode 0:'%m, (a==b).all())
  a=np.load('$D/beam0/out0.npy'); b=np.load('$D/beam%d/out0.npy'%m); print('beam tokens mode %d == mode 0:'%m, (a==b).all())"
for round in 1 2 3; do
  for m in 0 2 3; do
    GRAPE_GEMV_PDL=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 500 2>&1 | grep latency | sed "s/^/decode mode $m round $round: /"
  done
done
for m in 0 2 3; do
  GRAPE_GEMV_PDL=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search mode $m: /"
done
GRAPE_GEMV_PDL=3 GRAPE_CACHE_DIR=$D/kct timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='GpuParity.Gpt2*:RowVariants.*:GpuParity.Attention*:*GpuAttention.*:MonoExecutor.Gpt2DecodeSteps' > $R/tests-mode3.log 2>&1
echo "tests (mode 3) rc $?"; grep -E "^\[  (FAILED|PASSED)" $R/tests-mode3.log | head
