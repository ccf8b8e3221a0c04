#!/usr/bin/env bash
# GPU run 237: decode_two_stage with attn c_proj on the tensor cores, stage B's pushes four
# columns a store, a pacing sweep.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=200,250,300,400 MK_LM_L2=4 timeout 90 $C/decode_two_stage 200 2>&1 | tee $R/ts7.txt
