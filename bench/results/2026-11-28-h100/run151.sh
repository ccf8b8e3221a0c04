#!/usr/bin/env bash
# GPU run 151: are consecutive blocks of the persistent kernel on the same multiprocessor (a step
# with fewer work items than blocks would then use part of the GPU)? (1) the placement probe;
# (2) decode_step graph / mono / mono with blocks indexed by multiprocessor (GRAPE_MONO_PLACE=1),
# alternating, outputs compared, traces.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
nvcc -arch=sm_90 scripts/probes/block_placement/placement.cu -o /tmp/placement && /tmp/placement
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
GRAPE_MONO_PLACE=1 $B run "${DEC[@]}" --executor mono --output $D/op 2>&1 | tail -3
python3 -c "import numpy as np; print('placed mono identical to graph:', (np.load('$D/og/out0.npy')==np.load('$D/op/out0.npy')).all())"
for round in 1 2; do
  for v in graph mono mono-place; do
    case $v in graph) env=(); ex=graph;; mono) env=(); ex=mono;; mono-place) env=(GRAPE_MONO_PLACE=1); ex=mono;; esac
    env "${env[@]}" $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step $v round $round: /"
  done
done
GRAPE_MONO_PLACE=1 GRAPE_MONO_TRACE=$R/trace-place.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
head -9 $R/trace-place.txt; tail -1 $R/trace-place.txt
GRAPE_MONO_PLACE=1 timeout 300 $C/grape_gpu_tests --gtest_filter='MonoExecutor.*' > $R/mono-tests-place.log 2>&1; echo "tests (placed) rc=$?"
grep -E "^\[  |Failure" $R/mono-tests-place.log | head
