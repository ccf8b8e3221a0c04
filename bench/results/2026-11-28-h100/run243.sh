#!/usr/bin/env bash
# GPU run 243: decode_two_stage with stage B's mlp c_proj k steps split in quarters over the warps.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=250 MK_LM_L2=4 timeout 60 $C/decode_two_stage 100 2>&1 | tee $R/ts13.txt
