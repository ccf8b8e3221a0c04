#!/usr/bin/env bash
# GPU run 240: decode_two_stage with stage B's mlp c_proj taking two n-blocks a warp in one pass;
# without and with MK_EXTRA=1 (the clusters that fit beyond stage B's 12 join for lm_head).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=400,300,250 MK_LM_L2=4
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts10.txt
MK_EXTRA=1 timeout 60 $C/decode_two_stage 200 2>&1 | sed "s/^/extra: /" | tee -a $R/ts10.txt
timeout 60 $C/decode_two_stage 200 2>&1 | grep "us per step" | sed "s/^/again: /" | tee -a $R/ts10.txt
