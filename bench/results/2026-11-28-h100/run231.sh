#!/usr/bin/env bash
# GPU run 231 (thirty-seventh session): scripts/probes/decode_two_stage.cu (a decode step as one
# persistent kernel with two all-to-all stages a layer, head clusters and cluster sums in
# distributed shared memory) beside Grape's graph decode_step in the same run.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts1.txt
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
timeout 60 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --executor graph --entry decode_step \
  --input tok=$D/tok.npy --input p=$D/p.npy --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph: /" | tee -a $R/ts1.txt
timeout 30 $C/decode_two_stage 200 2>&1 | grep "us per step" | sed "s/^/again: /" | tee -a $R/ts1.txt
