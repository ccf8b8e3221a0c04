#!/usr/bin/env bash
# GPU run 236: decode_two_stage with the cluster exchanges as pushed stores counted on the
# receiver's mbarrier (st.async), no cluster barriers; pacing for the layers only.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
MK_PACE=100,150,200 MK_LM_L2=4 timeout 90 $C/decode_two_stage 200 2>&1 | tee $R/ts6.txt
