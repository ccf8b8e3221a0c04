#!/usr/bin/env bash
# GPU run 274 (fortieth session): the session's final decoder kernel (grape = grape_opt4: run
# 271's grape_opt2 with the rows' share of the sum reduced before the layer norm's shuffles, not
# after its stores). Every decoder-plan and mono-executor test and the device-input tests
# (device_of_pointer now asks cuPointerGetAttributes; pinned host memory added); grape_opt2 vs
# grape_opt4 traced, under ncu and grape bench; bench/run.sh's decode and overhead parts on the
# final binary (eager, graph, mono, PyTorch, logits compared); compute-sanitizer memcheck and
# initcheck of one decoder run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 260 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*:*DeviceInputs*' > $R/run274-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run274-tests.log | head -40
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in opt2 opt4; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  GRAPE_MONO_TRACE=$R/run274-trace-$b.txt timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $b"; grep -E "^(0|1|2|3|24) |total" $R/run274-trace-$b.txt
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|dram|rror" | sed "s/^/ncu $b p128: /"
done
for b in opt2 opt4 opt2 opt4; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
echo "a/b $(( $(date +%s) - t0 )) s"
export GRAPE_COMPILE_WORKER=$C/grape
unset GRAPE_TUNE
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 150 bench/run.sh $C/grape $R/bench > $R/run274-bench.log 2>&1
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
cp $R/bench/report.txt $R/run274-report.txt 2>/dev/null
rm -rf $R/bench
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc-opt4
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck initcheck; do
  timeout 100 $S --tool $tool $C/grape run "${A[@]}" --executor mono > $R/run274-$tool.txt 2>&1; echo "$tool rc=$?"
  grep -E "ERROR SUMMARY|rror" $R/run274-$tool.txt | tail -3
done
echo "total $(( $(date +%s) - t0 )) s"
