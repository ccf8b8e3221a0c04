#!/usr/bin/env bash
# Run 301: prepared in the forty-fourth session and run unchanged in the forty-fifth; its outputs
# (run301-*) are beside it.
#
# Build first (here, not on the device), from main's head:
#   cmake --build build-gpu -j2 --target grape grape_gpu_tests
#   mkdir -p build-carry && cp build-gpu/grape build-gpu/tests/gpu/grape_gpu_tests build-carry/
# then run with carry ["build-carry"]: bash bench/results/2026-11-28-h100/decoder45/run301_next.sh
#
# One binary, the variants by knob (each read at the plan's first run; compare within the run):
#   claims3     the default: lm_head's items past 3 listed rounds claimed at run time;
#   noclaims    GRAPE_DECODER_LM_CLAIM=-1: the kernel without the claims (main's before them, SASS
#               for SASS), so that claims at 3 rounds and none are compared in one run (the
#               forty-fourth session measured 4 against none and 3 against 4, in different runs);
#   prefetch    GRAPE_DECODER_PREFETCH_NEXT=1: the next launch's step-0 item put into L2 at the end;
#   spread      GRAPE_DECODER_LM_SPREAD=1 (with claims: run 295 measured it without them);
#   both        prefetch and spread;
#   onepoll     GRAPE_DECODER_ONE_POLLER=1: a layer step's counter polled by each cluster's rank 0
#               alone, which copies the whole rows to the cluster (15 pollers instead of 120);
#   kvfirst     GRAPE_DECODER_KV_EVICT_FIRST=1: the past keys and values into the ring as L2
#               evict_first (read once a launch), leaving L2 to lm_head's kept items;
#   kvfirst5    the same with 5 listed lm_head rounds, so 4 items a block kept in L2
#               (GRAPE_DECODER_LM_L2=4 puts at most the listed ones there).
# ncu's DRAM read per launch is printed too (the kept lm_head items show there).
#  1. every DecoderPlan and MonoExecutor test (the new NextLaunchsFirstItemPrefetched included);
#  2. ncu gpu__time_duration and dram__bytes_read of grape_decoder (10 launches after 5), two
#     rounds interleaved (about 210 s; a third round would pass the call's 600 s);
#  3. the traces of claims3, prefetch and onepoll (step 0's item wait and span; the wakes and rows).
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' \
  > $R/run301-tests.log 2>&1
rc=$?
echo "tests rc=$rc $(( $(date +%s) - t0 )) s: $(grep -cE '^\[ +OK ' $R/run301-tests.log) ok"
grep -E "^\[ +(FAILED|SKIPPED) " $R/run301-tests.log | head
[ $rc = 0 ] || grep -B3 -A12 "Failure" $R/run301-tests.log | head -40
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1
  shift 1
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name timeout 40 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 \
    --launch-count 10 $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 15 > /tmp/ncu-$name.txt 2>&1
  echo "ncu $name: $(grep -E 'duration' /tmp/ncu-$name.txt | awk '{print $NF}' | tr '\n' ' ')"
  echo "dram $name: $(grep -E 'dram__bytes_read' /tmp/ncu-$name.txt | awk '{print $NF $(NF-1)}' | tr '\n' ' ')"
  grep -m3 -E 'rror' /tmp/ncu-$name.txt
}
for round in 1 2; do
  variant claims3
  variant noclaims GRAPE_DECODER_LM_CLAIM=-1
  variant prefetch GRAPE_DECODER_PREFETCH_NEXT=1
  variant spread GRAPE_DECODER_LM_SPREAD=1
  variant both GRAPE_DECODER_PREFETCH_NEXT=1 GRAPE_DECODER_LM_SPREAD=1
  variant onepoll GRAPE_DECODER_ONE_POLLER=1
  variant kvfirst GRAPE_DECODER_KV_EVICT_FIRST=1
  variant kvfirst5 GRAPE_DECODER_KV_EVICT_FIRST=1 GRAPE_DECODER_LM_CLAIM=5
done | tee $R/run301-ncu.txt
for v in claims3 prefetch onepoll; do
  case $v in
    claims3) e=() ;;
    prefetch) e=(GRAPE_DECODER_PREFETCH_NEXT=1) ;;
    onepoll) e=(GRAPE_DECODER_ONE_POLLER=1) ;;
  esac
  env "${e[@]}" GRAPE_CACHE_DIR=/tmp/gc-$v GRAPE_MONO_TRACE=$R/run301-trace-$v.txt \
    GRAPE_MONO_TRACE_STAMPS=$R/run301-stamps-$v.txt \
    timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "trace $v: $(grep -E '^(0|22|24) ' $R/run301-trace-$v.txt | cut -d'|' -f1,3 | tr '\n' ';') $(grep total $R/run301-trace-$v.txt)"
  gzip -f $R/run301-stamps-$v.txt
done
echo "total $(( $(date +%s) - t0 )) s"
