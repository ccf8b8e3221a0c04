#!/usr/bin/env bash
# Run 298 (forty-fourth session): lm_head's claimed items as a compile-time switch of the kernel
# (GRAPE_DEC_LM_CLAIM; its code absent without it: the SASS of the kernel without claims is
# instruction for instruction main's) and on by default (4 listed rounds).
# build-carry/: grape, grape_gpu_tests (75312f0's code, main's kernel); grape_cx,
# grape_gpu_tests_cx (the working tree).
#  1. the whole GPU suite on grape_gpu_tests_cx (claims on by default) in 4 shards;
#  2. bench/run.sh's decode part with grape_cx: eager, graph, mono and PyTorch + CUDA graph, logits
#     of auto and mono against PyTorch's;
#  3. ncu gpu__time_duration of grape_decoder (10 launches after 5), two rounds interleaved: main,
#     claims (default), GRAPE_DECODER_LM_CLAIM=-1 (the kernel without them);
#  4. the trace and stamps with claims (lm_head's blocks' ends).
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_cx
export GTEST_TOTAL_SHARDS=4
for i in 0 1 2 3; do
  GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gs$i timeout 340 $C/grape_gpu_tests_cx --gtest_color=no \
    > $R/run298-shard$i.log 2>&1 &
done
wait
unset GTEST_TOTAL_SHARDS
echo "shards done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  echo "shard $i: $(grep -cE '^\[ +OK \]' $R/run298-shard$i.log) ok, $(grep -E '^\[ +(PASSED|FAILED) +\]' $R/run298-shard$i.log | tr '\n' ' ')"
  grep -E "^\[ +FAILED +\] [A-Za-z]|^\[ +SKIPPED +\] [A-Za-z]" $R/run298-shard$i.log | sort -u | head -10
done
grep -h -B3 -A12 "Failure" $R/run298-shard*.log | head -40
echo "tests run: $(grep -hE '^\[ +RUN +\]' $R/run298-shard*.log | wc -l)"
GRAPE_CACHE_DIR=/tmp/gb GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 \
  GRAPE_BENCH_NO_COMPILE=1 timeout 120 bench/run.sh $C/grape_cx $R/bench > $R/run298-bench.log 2>&1
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
cp $R/bench/report.txt $R/run298-report.txt 2>/dev/null
rm -rf $R/bench
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1 bin=$2
  shift 2
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' |
    tr '\n' ' ' | sed "s/^/ncu $name: /"
  echo
}
for round in 1 2; do
  variant main $C/grape
  variant claims $C/grape_cx
  variant noclaims $C/grape_cx GRAPE_DECODER_LM_CLAIM=-1
done
GRAPE_CACHE_DIR=/tmp/gc-claims GRAPE_COMPILE_WORKER=$C/grape_cx GRAPE_MONO_TRACE=$R/run298-trace-claims.txt \
  GRAPE_MONO_TRACE_STAMPS=$R/run298-stamps-claims.txt \
  timeout 60 $C/grape_cx bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
echo "trace claims: $(grep -E '^(22|23|24) ' $R/run298-trace-claims.txt | awk '{printf "step %s span %s wake %s; ", $1, $2, $3}') $(grep total $R/run298-trace-claims.txt)"
python3 scripts/decoder_stamps.py $R/run298-stamps-claims.txt 24 | tail -n +2
gzip -f $R/run298-stamps-claims.txt
echo "total $(( $(date +%s) - t0 )) s"
