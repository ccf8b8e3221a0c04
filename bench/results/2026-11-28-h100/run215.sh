#!/usr/bin/env bash
# (Ran on branch experiment/load-order, whose GRAPE_EXP defines the variants; the script and its
# outputs are copied here with the other runs.)
# GPU run 215 (thirty-fourth session, branch experiment/load-order): why does each decode kernel
# take 2-4 us from its wait to its first shared-memory stage (run 214's phase marks)? Hypothesis:
# the loads issued after the wait (A's rows, the attention's q) return only after the loads issued
# before them (the weight, the first keys/values) — one SM's loads come back in order. Variants
# (GRAPE_EXP defines): NO_PRELOAD (gemv_mma requests its weight after staging A, not before the
# wait), ATTN_Q_FIRST (the attention loads q before its first key/value rows), ATTN_NO_KVPRE (no
# early key/value rows). decode_step graph timelines with marks and latency, 2 rounds.
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
VARS="base NO_PRELOAD ATTN_Q_FIRST ATTN_NO_KVPRE"
e() { [ $1 = base ] && echo "GRAPE_EXP=" || echo "GRAPE_EXP=$1"; }
for x in $VARS; do
  env $(e $x) GRAPE_CACHE_DIR=$D/t-$x GRAPE_KERNEL_TIMELINE=$R/run215-timeline-$x.txt $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== $x"; python3 scripts/timeline_summary.py $R/run215-timeline-$x.txt | sed -n '/phase marks/,$p'
done | tee $R/run215-marks.txt
for round in 1 2; do
  for x in $VARS; do
    env $(e $x) GRAPE_CACHE_DIR=$D/k-$x $C/grape bench examples/gpt2.grp "${ARGS[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run215-decode.txt
echo "total $(( $(date +%s) - t0 )) s"
