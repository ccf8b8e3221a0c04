#!/usr/bin/env bash
# GPU run 291 (forty-second session): the final kernel (main 98584e2: token ids and position by
# value, the producer before the cluster barrier). Every DecoderPlan and MonoExecutor test;
# bench/run.sh's decode part (eager, graph, mono, PyTorch with a CUDA graph, logits compared);
# compute-sanitizer memcheck and initcheck over two decoder-plan calls (`grape bench --warmup 0
# --iters 1`: its plan printed).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 200 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run291-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run291-tests.log | head -40
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run291-tests.log | head -60; exit 1; }
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 120 bench/run.sh $C/grape $R/bench > $R/run291-bench.log 2>&1
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
cp $R/bench/report.txt $R/run291-report.txt 2>/dev/null
rm -rf $R/bench
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
$C/grape bench "${A[@]}" --executor mono --warmup 0 --iters 1 > $R/run291-plain.txt 2>&1; echo "plain bench rc=$?"; grep -iE "plan" $R/run291-plain.txt | head -3
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for i in 1 2; do
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|dram__|rror" | awk '{print $(NF-1), $NF}' | tr '\n' ' ' | sed "s/^/ncu final: /"; echo
done
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck initcheck; do
  timeout 150 $S --tool $tool $C/grape bench "${A[@]}" --executor mono --warmup 0 --iters 1 > $R/run291-$tool.txt 2>&1; echo "$tool rc=$?"
  grep -E "ERROR SUMMARY|rror|plan" $R/run291-$tool.txt | tail -4
done
echo "total $(( $(date +%s) - t0 )) s"
