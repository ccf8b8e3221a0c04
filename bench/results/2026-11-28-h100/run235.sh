#!/usr/bin/env bash
# GPU run 235: decode_two_stage with the weight stream paced (MK_PACE: ns per 8 KB copy) and
# lm_head items put into L2 during the last layers (MK_LM_L2).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=150,250,350,500 MK_LM_L2=4,8 timeout 90 $C/decode_two_stage 200 2>&1 | tee $R/ts5.txt
