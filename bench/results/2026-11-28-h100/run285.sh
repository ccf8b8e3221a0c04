#!/usr/bin/env bash
# GPU run 285 (forty-first session): opt3, the products' mma with the weights as the 16-row
# operand and the rows as the 8-column one (half the mma at 5 rows). The decoder-plan and
# mono-executor tests on opt3 (grape_gpu_tests); base (9ac198d) and opt3 traced and under ncu at
# positions 128 and 200, then grape bench call latency alternated.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt3
GRAPE_CACHE_DIR=/tmp/gd timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run285-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run285-tests.log | head -20
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run285-tests.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
for b in base opt3; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  GRAPE_MONO_TRACE=$R/run285-trace-$b.txt timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $b"; grep -E "^(0|1|2|3|12|13|24) |total" $R/run285-trace-$b.txt
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p128: /"
done
for b in base opt3; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --input p=$D/p200.npy --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p200: /"
done
for b in base opt3 base opt3; do
  GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b timeout 60 $C/grape_$b bench "${A[@]}" --input p=$D/p.npy --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench $b: /"
done
echo "total $(( $(date +%s) - t0 )) s"
