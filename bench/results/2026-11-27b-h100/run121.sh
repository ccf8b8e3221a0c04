#!/usr/bin/env bash
# GPU run 121: A/B of the row kernels' eight loads in flight (grape_block_pass). grape-seq is the
# block-sequence commit 859324d without it (the three templates restored, same build otherwise);
# grape is the head. Alternating, three rounds: beam_search and generate graph time; the eager
# profile's log_softmax (beam) and argmax (generate) lines; ncu times of those kernels.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda)
for g in grape-seq grape; do GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${BEAM[@]}" --executor graph --warmup 1 --iters 1 > /dev/null 2>&1; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor graph --warmup 1 --iters 1 > /dev/null 2>&1; done
for r in 1 2 3; do
  for g in grape-seq grape; do
    echo -n "r$r $g beam graph: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | tr '\n' ' '; echo
    echo -n "r$r $g generate graph: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | tr '\n' ' '; echo
  done
done
for g in grape-seq grape; do
  echo "$g beam eager profile:"; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | grep -E "log_softmax|topk|sequence 4" 
  echo "$g generate eager profile:"; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${GEN[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | grep -E "argmax|sequence" | head -4
done
for g in grape-seq grape; do
  echo "$g ncu:"
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 120 ncu --csv --print-units base --clock-control none --cache-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:"argmax|log_softmax" --launch-skip 4 --launch-count 4 $B/$g bench examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda --executor eager --warmup 0 --iters 1 2>/dev/null | grep -E "argmax|log_softmax" | awk -F'","' '{print $5, $(NF-2), $NF}' | head -8
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 120 ncu --csv --print-units base --clock-control none --cache-control none --metrics gpu__time_duration.sum,launch__registers_per_thread -k regex:"log_softmax" --launch-skip 4 --launch-count 4 $B/$g bench "${BEAM[@]}" --executor eager --warmup 0 --iters 1 2>/dev/null | grep -E "log_softmax" | awk -F'","' '{print $5, $(NF-2), $NF}' | head -8
done
