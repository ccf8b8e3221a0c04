#!/usr/bin/env bash
# GPU run 234: decode_two_stage with 32-column tiles swizzled (conflict-free ldmatrix) and mode 8
# (the next item issued only after the previous step's rows are staged).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts4.txt
