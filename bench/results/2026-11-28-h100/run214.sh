#!/usr/bin/env bash
# GPU run 214 (thirty-fourth session; run213.sh as prepared, never run, plus the phase marks;
# experiment/attention-release-at-start): the decode attention kernel releasing its successor at
# its start (GRAPE_ATTN_RELEASE_AT_START=1) instead of after its key passes. The kernel timeline of
# run 211 showed attn c_proj's blocks starting only as the attention ends (every other kernel's
# start about 1 us before its predecessor's end); the attention uses 60 of 132 SMs, so the GEMV's
# blocks could be resident and request their weight meanwhile. decode_step graph A/B (3 rounds),
# the timeline of each, beam_search and generate, and the attention/GPT-2 GPU tests under the knob.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_ATTN_RELEASE_AT_START=1 GRAPE_CACHE_DIR=/tmp/gta timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='*Attention*:GpuParity.Gpt2*:RowVariants.*:KernelTimeline.*' > $R/run214-gpu-tests.log 2>&1
echo "gpu tests rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run214-gpu-tests.log; gzip -f $R/run214-gpu-tests.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
v() { case $1 in keys) echo "GRAPE_CACHE_DIR=$D/k0";; start) echo "GRAPE_ATTN_RELEASE_AT_START=1 GRAPE_CACHE_DIR=$D/k1";; esac; }
for x in keys start; do for e in graph eager; do env $(v $x) GRAPE_CACHE_DIR=$D/t-$x GRAPE_KERNEL_TIMELINE=$R/run214-timeline-$e-$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor $e --warmup 5 --iters 30 > /dev/null 2>&1; python3 scripts/timeline_summary.py $R/run214-timeline-$e-$x.txt > $R/run214-timeline-$e-$x-summary.txt 2>&1; done; done
cat $R/run214-timeline-graph-keys-summary.txt $R/run214-timeline-graph-start-summary.txt
for round in 1 2 3; do
  for x in keys start; do
    env $(v $x) $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run214-decode.txt
for x in keys start keys start; do
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry beam_search --input prompt=$D/prompt.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run214-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
