#!/usr/bin/env bash
# GPU run 239: decode_two_stage with stage B pushing its gelu outputs to the cluster (instead of
# its 5 x 768 partial products) and each block computing the cluster's mlp c_proj for its 96
# columns; twice.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=300,250,200 MK_LM_L2=4
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts9.txt
timeout 60 $C/decode_two_stage 200 2>&1 | grep "us per step" | sed "s/^/again: /" | tee -a $R/ts9.txt
