#!/usr/bin/env bash
# GPU run 245: decode_two_stage without and with MK_EXTRA=1 (run 244's MK_EXTRA run hung in mode
# 8: the lm_head-only blocks' items waited for stagings they never do; fixed).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=250 MK_LM_L2=4
MK_EXTRA=1 timeout 40 $C/decode_two_stage 200 2>&1 | sed "s/^/extra: /" | tee $R/ts15.txt
timeout 40 $C/decode_two_stage 200 2>&1 | grep "us per step" | tee -a $R/ts15.txt
