#!/usr/bin/env bash
# Run 303 (forty-fifth session): the final binary (run 302's: claims at 3 listed rounds, lm_head's L2
# prefetches spread by default).
#  1. bench/run.sh's decode part: eager, graph, mono and PyTorch + CUDA graph; the logits of auto
#     and mono against PyTorch's;
#  2. compute-sanitizer memcheck, racecheck and synccheck of two real decode_step calls (mono);
#  3. the trace and stamps.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gb GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 \
  GRAPE_BENCH_NO_COMPILE=1 timeout 150 bench/run.sh $C/grape $R/bench > $R/run303-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null | head -14
python3 - $R/bench <<'PY'
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_decode_logits.npy").astype(np.float64)
for name in ("grape_decode", "grape_decode_mono"):
    g = np.load(d + "/" + name + "/out0.npy").astype(np.float64).reshape(t.shape)
    print("%s vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (name,
        np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
cp $R/bench/report.txt $R/run303-report.txt 2>/dev/null
rm -rf $R/bench
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck synccheck; do
  GRAPE_CACHE_DIR=/tmp/gm timeout 120 $S --tool $tool $C/grape bench "${A[@]}" --executor mono --warmup 1 --iters 1 \
    > $R/run303-$tool.txt 2>&1
  echo "$tool rc=$? $(( $(date +%s) - t0 )) s: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/run303-$tool.txt | tr '\n' ' ') $(grep -m1 -o 'plan: [a-z]*' $R/run303-$tool.txt)"
  grep -m6 -E "^========= (Error|Warning|Race|Barrier|Invalid)" $R/run303-$tool.txt
done
GRAPE_CACHE_DIR=/tmp/gm GRAPE_MONO_TRACE=$R/run303-trace.txt GRAPE_MONO_TRACE_STAMPS=$R/run303-stamps.txt \
  timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
echo "trace: $(grep -E '^(0|22|24) ' $R/run303-trace.txt | cut -d'|' -f1 | tr '\n' ';') $(grep total $R/run303-trace.txt)"
python3 scripts/decoder_stamps.py $R/run303-stamps.txt 24 | tail -n +2 | head -8
gzip -f $R/run303-stamps.txt
echo "total $(( $(date +%s) - t0 )) s"
