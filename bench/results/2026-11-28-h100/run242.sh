#!/usr/bin/env bash
# GPU run 242: decode_two_stage with the staging's layer norm in one pass, the share added after it.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=250 MK_LM_L2=4 timeout 60 $C/decode_two_stage 100 2>&1 | tee $R/ts12.txt
