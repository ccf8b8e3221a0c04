#!/usr/bin/env bash
# (Ran on branch experiment/load-order, whose GRAPE_EXP defines the variants; the script and its
# outputs are copied here with the other runs.)
# GPU run 216 (thirty-fourth session, branch experiment/load-order): run 215 showed a decode GEMV's
# weight taking ~3 us from request to arrival (4.7 MB from DRAM: NO_PRELOAD's staged -> summed)
# and A's loads waiting behind it. GEMV_PREFETCH: each gemv_mma block requests the next matrix
# product's weight into L2 as it starts (the plan's existing prefetch ranges), so a product's
# weight streams in while the products before it run. With and without ATTN_Q_FIRST; decode_step
# graph timelines and latency (2 rounds), beam_search and generate.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy --executor graph)
VARS="base GEMV_PREFETCH GEMV_PREFETCH,ATTN_Q_FIRST"
e() { [ $1 = base ] && echo "GRAPE_EXP=" || echo "GRAPE_EXP=$1"; }
for x in $VARS; do
  env $(e $x) GRAPE_CACHE_DIR=$D/t-$x GRAPE_KERNEL_TIMELINE=$R/run216-timeline-$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== $x"; python3 scripts/timeline_summary.py $R/run216-timeline-$x.txt | sed -n '/phase marks/,$p'
done | tee $R/run216-marks.txt
for round in 1 2; do
  for x in $VARS; do
    env $(e $x) GRAPE_CACHE_DIR=$D/k-$x $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run216-decode.txt
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
B=(--weights $D/gpt2.safetensors --backend cuda --executor graph --warmup 2 --iters 10)
for x in $VARS; do
  env $(e $x) GRAPE_CACHE_DIR=$D/k-$x timeout 90 $C/grape bench examples/gpt2.grp "${B[@]}" --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  env $(e $x) GRAPE_CACHE_DIR=$D/k-$x timeout 90 $C/grape bench examples/gpt2.grp "${B[@]}" --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run216-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
