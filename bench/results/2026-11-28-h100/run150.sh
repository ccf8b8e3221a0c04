#!/usr/bin/env bash
# GPU run 150: does the barrier's spinning slow the phases? (run 149: one product alone in a
# persistent kernel runs as fast as its own kernel, but 2x slower inside decode_step's.) Blocks
# waiting at a barrier pause GRAPE_MONO_SPIN_NS between reads of the barrier word: 0, 100, 400,
# 1000 ns, alternating with graph; traces of 0 and 400.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
for ns in 0 100 400 1000; do
  GRAPE_MONO_SPIN_NS=$ns $B run "${DEC[@]}" --executor mono --output $D/om$ns > /dev/null
  python3 -c "import numpy as np; print('spin $ns: identical to graph:', (np.load('$D/og/out0.npy')==np.load('$D/om$ns/out0.npy')).all())"
done
for round in 1 2; do
  $B bench "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step graph round $round: /"
  for ns in 0 100 400 1000; do
    GRAPE_MONO_SPIN_NS=$ns $B bench "${DEC[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step mono spin $ns round $round: /"
  done
done
for ns in 0 400; do
  GRAPE_MONO_SPIN_NS=$ns GRAPE_MONO_TRACE=$R/trace-$ns.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
  head -9 $R/trace-$ns.txt; tail -1 $R/trace-$ns.txt
done
nsys --version 2>&1 | head -1
