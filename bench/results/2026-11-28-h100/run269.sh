#!/usr/bin/env bash
# GPU run 269 (fortieth session): the gaps the thirty-ninth session left on its final kernel
# (408364b): every decoder-plan and mono-executor test, including the never-run 256-position
# long-cache test; bench/run.sh's decode and overhead parts (eager, graph, mono, PyTorch, logits
# compared); the decode_step logits of mono vs PyTorch; compute-sanitizer memcheck and initcheck
# of one decoder run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 280 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run269-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run269-tests.log | head -40
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 150 bench/run.sh $C/grape $R/bench > $R/run269-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null
python3 - $R/bench <<'PY'
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_decode_logits.npy").astype(np.float64)
for name in ("grape_decode", "grape_decode_mono"):
    g = np.load(d + "/" + name + "/out0.npy").astype(np.float64).reshape(t.shape)
    print("%s vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (name,
        np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
rm -rf $R/bench/kernel-cache $R/bench/*.safetensors $R/bench/*/ 2>/dev/null
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
timeout 60 $C/grape run "${B[@]}" --executor mono --output $D/warm > /dev/null 2>&1; echo "warm rc=$?"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck initcheck; do
  timeout 100 $S --tool $tool $C/grape run "${B[@]}" --executor mono > $R/run269-$tool.txt 2>&1; echo "$tool rc=$?"
  grep -E "ERROR SUMMARY|rror" $R/run269-$tool.txt | tail -3
done
echo "total $(( $(date +%s) - t0 )) s"
