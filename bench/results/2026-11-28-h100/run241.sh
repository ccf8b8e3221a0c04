#!/usr/bin/env bash
# GPU run 241: decode_two_stage with a mark inside the rows' staging (warp 0's rows loaded).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=250 MK_LM_L2=4 timeout 60 $C/decode_two_stage 100 2>&1 | tee $R/ts11.txt
