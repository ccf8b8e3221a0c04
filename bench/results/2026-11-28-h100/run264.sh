#!/usr/bin/env bash
# GPU run 264 (thirty-ninth session): the session's final decoder kernel (run 262's, ld.acquire
# polls kept after run 263): every decoder-plan test, bench/run.sh's decode and overhead parts
# (eager, graph, mono, PyTorch), the `decode` entry graph vs mono, ncu of decode_step at 128.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*' > $R/run264-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run264-tests.log | head -30
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_COMPILE=1 timeout 170 bench/run.sh $C/grape $R/bench > $R/run264-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null
rm -rf $R/bench/kernel-cache $R/bench/*.safetensors $R/bench/*/ 2>/dev/null
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BD=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode --input tok=$D/tok.npy)
{
  for e in graph mono; do
    timeout 100 $C/grape bench "${BD[@]}" --warmup 20 --iters 200 --executor $e 2>&1 | grep -E "latency|plan|syncs|rror" | sed "s/^/decode entry (positions 0-219) $e: /"
  done
  N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
  timeout 100 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram|rror" | sed "s/^/ncu decode_step p128: /"
  GRAPE_MONO_TRACE=$R/run264-trace.txt timeout 100 $C/grape bench "${B[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  grep total $R/run264-trace.txt
} | tee $R/run264-extra.txt
echo "total $(( $(date +%s) - t0 )) s"
