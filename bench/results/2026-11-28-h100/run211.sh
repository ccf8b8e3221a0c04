#!/usr/bin/env bash
# GPU run 211 (thirty-third session): the kernel timeline (GRAPE_KERNEL_TIMELINE, new): its GPU test
# and the kernel-profile tests; decode_step's timeline under graph and eager (the last of 30 runs),
# and decode_step graph with and without the stamps (what they cost).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='KernelTimeline.*:KernelProfile.*' > $R/run211-gpu-tests.log 2>&1
echo "gpu tests rc $? $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|Failure" $R/run211-gpu-tests.log | head
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for ex in graph eager; do
  GRAPE_CACHE_DIR=$D/kt GRAPE_KERNEL_TIMELINE=$R/run211-timeline-$ex.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor $ex --warmup 5 --iters 30 2>&1 | grep latency | sed "s/^/decode_step $ex with the timeline: /"
done | tee $R/run211-decode.txt
for round in 1 2; do
  GRAPE_CACHE_DIR=$D/k0 $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph plain round $round: /"
  GRAPE_CACHE_DIR=$D/kt GRAPE_KERNEL_TIMELINE=$D/tl.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph stamped round $round: /"
done | tee -a $R/run211-decode.txt
head -5 $R/run211-timeline-graph.txt
echo "total $(( $(date +%s) - t0 )) s"
