#!/usr/bin/env bash
# GPU run 203 (thirty-second session): (1) decode_step graph A/B of three binaries, all with folded
# updates, rounds alternating: main (the head), experiment/gemv-prefetch-norm-operands rebased (a
# fused norm's scale and shift prefetched into L1 during the row statistics),
# experiment/gemv-mma-push-split-arrive rebased (cluster sums pushed after a split-arrive barrier);
# logits compared; beam_search and generate once each; (2) racecheck of the push variant on GPT-2's
# entries (eager); (3) bench/beam with its peer and the beam logic measured alone.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
for b in grape grape-prefetch grape-push; do
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/k-$b $C/$b run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec-$b > /dev/null
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/k-$b $C/$b run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$b > /dev/null
done
python3 - "$D" <<'PY' | tee $R/run203-outputs.txt
import numpy as np, sys
d = sys.argv[1]
a = np.load(f"{d}/dec-grape/out0.npy").astype(np.float32)
for b in ("grape-prefetch", "grape-push"):
    x = np.load(f"{d}/dec-{b}/out0.npy").astype(np.float32)
    t0, t1 = np.load(f"{d}/beam-grape/out0.npy"), np.load(f"{d}/beam-{b}/out0.npy")
    print(b, "decode logits max |diff| to main", float(np.abs(a - x).max()), "argmax equal", bool((a.argmax(-1) == x.argmax(-1)).all()),
          "beam tokens equal", int((t0 == t1).sum()), "of", t0.size)
PY
for round in 1 2 3; do
  for b in grape grape-prefetch grape-push; do
    GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/k-$b $C/$b bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $b round $round: /"
  done
done | tee $R/run203-decode.txt
for b in grape grape-prefetch grape-push; do
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/k-$b timeout 60 $C/$b bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $b: /"
  GRAPE_COMPILE_WORKER=$C/$b GRAPE_CACHE_DIR=$D/k-$b timeout 60 $C/$b bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate $b: /"
done | tee $R/run203-beam-generate.txt
echo "A/B $(( $(date +%s) - t0 )) s"
unset GRAPE_TUNE
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_COMPILE_WORKER=$C/grape-push GRAPE_CACHE_DIR=/tmp/gs-push timeout 100 python3 scripts/gpu_sanitize.py --grape $C/grape-push --out $R/san-push --sanitizer $S --tools racecheck \
  --executors eager --jobs 8 --filter gpt2 > $R/run203-racecheck-push.log 2>&1
echo "racecheck push rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san-push/summary.txt 2>/dev/null; grep -l "ERROR SUMMARY: [1-9]" -r $R/san-push | head -3; rm -rf $R/san-push
export GRAPE_COMPILE_WORKER=$C/grape
timeout 200 python3 bench/beam/bench_beam.py --grape $C/grape --out $D/beamb > $R/run203-beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; tail -9 $R/run203-beam.log
cp $D/beamb/beam_summary.json $R/run203-beam_summary.json 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
