#!/usr/bin/env bash
# GPU run 153 (final state of the session): (1) the whole GPU suite (kernel templates changed for
# GRAPE_PERSISTENT: attention.cuh, gemv.cuh, prelude.cuh; the mono executor's tests), builds through
# worker processes; (2) decode_step graph and mono at GPT-2 small's real size, alternating, and the
# persistent kernel's time under ncu (issue 7's measure, one kernel); (3) compute-sanitizer memcheck
# and racecheck of the mono executor's tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
export GRAPE_COMPILE_WORKER=$B
rm -rf /tmp/grape-cache
GRAPE_SKIP_BENCH=1 OUT=$R scripts/gpu-check.sh run 2>&1 | tail -6
grep -E "MonoExecutor" $R/gpu-tests.log | grep -E "OK|FAIL" | head
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
$B run "${DEC[@]}" --executor mono --output $D/om > /dev/null
python3 -c "import numpy as np; print('decode_step mono identical to graph:', (np.load('$D/og/out0.npy')==np.load('$D/om/out0.npy')).all())"
for round in 1 2; do
  for ex in graph mono; do
    $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency|kernels per" | sed "s/^/decode_step $ex round $round: /"
  done
done
ncu --metrics gpu__time_duration.sum,dram__bytes.sum -k grape_persistent -c 1 $B run "${DEC[@]}" --executor mono --output $D/o3 2>&1 | grep -E "duration|dram" | sed "s/^/ncu persistent: /"
timeout 240 compute-sanitizer --tool memcheck --error-exitcode 9 $C/grape_gpu_tests --gtest_filter='MonoExecutor.Gpt2DecodeSteps:MonoExecutor.MlpWithChangingRows' > $R/memcheck-mono.log 2>&1; echo "memcheck rc=$?"; tail -3 $R/memcheck-mono.log
timeout 240 compute-sanitizer --tool racecheck --error-exitcode 9 $C/grape_gpu_tests --gtest_filter='MonoExecutor.MlpWithChangingRows' > $R/racecheck-mono.log 2>&1; echo "racecheck rc=$?"; tail -3 $R/racecheck-mono.log
