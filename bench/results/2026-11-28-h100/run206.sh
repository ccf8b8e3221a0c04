#!/usr/bin/env bash
# GPU run 206 (thirty-third session): where the mono executor stands on today's kernels (gemv_mma,
# folded updates, row variants) — decode_step graph vs mono (alternating rounds), a mono trace
# (per-phase times), the persistent source (for ptxas here).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0
D=$(mktemp -d)
export GRAPE_CACHE_DIR=$D/k
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
$C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/g > /dev/null 2>&1
mkdir -p $D/dump
GRAPE_DUMP_KERNELS=$D/dump GRAPE_MONO_TRACE=$R/run206-mono-trace.txt $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor mono --output $D/m > $R/run206-mono-run.txt 2>&1
echo "mono run rc $? $(( $(date +%s) - t0 )) s"
python3 - $D/g $D/m <<'PY'
import numpy as np, sys, glob, os
for f in sorted(glob.glob(sys.argv[1] + "/*.npy")):
    a = np.load(f); b = np.load(os.path.join(sys.argv[2], os.path.basename(f)))
    print(os.path.basename(f), a.shape, "identical" if np.array_equal(a, b) else "max diff %g" % np.abs(a.astype(np.float64) - b).max())
PY
cp $D/dump/*persistent* $R/ 2>/dev/null; gzip -f $R/*persistent*.cu 2>/dev/null; ls $R
for round in 1 2; do
  for ex in graph mono; do
    $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $ex round $round: /"
  done
done | tee $R/run206-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
