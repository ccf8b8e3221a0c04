#!/usr/bin/env bash
# GPU run 201 (thirty-second session): updates folded into their product's epilogue
# (scheduler/fusion.h "Folded updates": the decode step's key/value cache rows written by the q/k/v
# GEMV; decode_step 75 -> 63 kernels). (1) decode_step graph A/B, GRAPE_FOLD_UPDATES=0 (before) and
# 1, same binary, separate kernel caches, three rounds alternating, outputs compared; beam_search
# and generate once each way, tokens compared; (2) the whole GPU suite, 4 shards.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
for m in 0 1; do
  GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec$m > /dev/null
  GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam$m > /dev/null
  GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --output $D/gen$m > /dev/null
done
$C/grape run examples/gpt2.grp --weights $D/gpt2.safetensors --backend cpu "${DEC[@]}" --output $D/cpu > /dev/null
python3 - "$D" <<'PY' | tee $R/run201-outputs.txt
import numpy as np, sys, os
d = sys.argv[1]
a, b, c = (np.load(f"{d}/{x}/out0.npy").astype(np.float32) for x in ("dec0", "dec1", "cpu"))
print("decode_step logits: |fold - before| max", float(np.abs(a - b).max()), "| fold - cpu| max", float(np.abs(b - c).max()),
      "|before - cpu| max", float(np.abs(a - c).max()), "argmax equal", bool((a.argmax(-1) == b.argmax(-1)).all()), bool((b.argmax(-1) == c.argmax(-1)).all()))
for e in ("beam", "gen"):
    x, y = np.load(f"{d}/{e}0/out0.npy"), np.load(f"{d}/{e}1/out0.npy")
    print(e, "tokens equal", int((x == y).sum()), "of", x.size)
PY
for round in 1 2 3; do
  for m in 0 1; do
    GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency|kernels" | tr '\n' ' ' | sed "s/^/decode_step fold=$m round $round: /"; echo
  done
done | tee $R/run201-decode.txt
for m in 0 1; do
  GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels" | tr '\n' ' ' | sed "s/^/beam_search fold=$m: /"; echo
  GRAPE_TUNE=0 GRAPE_FOLD_UPDATES=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels" | tr '\n' ' ' | sed "s/^/generate fold=$m: /"; echo
done | tee $R/run201-beam-generate.txt
echo "A/B done $(( $(date +%s) - t0 )) s"
export GRAPE_CACHE_DIR=/tmp/gt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 420 $C/grape_gpu_tests --gtest_color=no > $R/run201-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run201-gpu-tests.[0-3].log > $R/run201-gpu-tests.log; rm $R/run201-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run201-gpu-tests.log
gzip -f $R/run201-gpu-tests.log
echo "total $(( $(date +%s) - t0 )) s"
