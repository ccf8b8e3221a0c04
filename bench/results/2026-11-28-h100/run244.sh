#!/usr/bin/env bash
# GPU run 244: decode_two_stage with attn c_proj through the same quartered product as mlp c_proj
# (proj96); without and with MK_EXTRA=1 (clusters beyond the 12 join for lm_head only, no layer
# steps).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=300,250 MK_LM_L2=4
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts14.txt
MK_EXTRA=1 timeout 60 $C/decode_two_stage 200 2>&1 | sed "s/^/extra: /" | tee -a $R/ts14.txt
