#!/usr/bin/env bash
# GPU run 282 (forty-first session): the steps' sums in fixed point with a count of terms in each
# element (a step polls its rows themselves: no counters, no release fence after the last block's
# reductions). The decoder-plan and mono-executor tests on the new kernel (grape), then the
# previous kernel (grape_base, 9ac198d) against it traced and under ncu at position 128, the new
# one at GRAPE_DECODER_POLL 0, 3 and 32, and grape bench call latency.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 260 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run282-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|differs|plan '" $R/run282-tests.log | head -40
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for v in base:0 new:0 new:3 new:32; do
  b=${v%%:*}; poll=${v##*:}; bin=$C/grape; [ $b = base ] && bin=$C/grape_base
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin GRAPE_DECODER_POLL=$poll
  GRAPE_MONO_TRACE=$R/run282-trace-$b-$poll.txt timeout 60 $bin bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $b poll $poll"; grep -E "^(0|1|2|3|12|13|24) |total" $R/run282-trace-$b-$poll.txt
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|dram|rror" | sed "s/^/ncu $b $poll: /"
done
for v in base:0 new:0 new:3 base:0 new:0 new:3; do
  b=${v%%:*}; poll=${v##*:}; bin=$C/grape; [ $b = base ] && bin=$C/grape_base
  GRAPE_DECODER_POLL=$poll GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $bin bench "${A[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench $b $poll: /"
done
echo "total $(( $(date +%s) - t0 )) s"
