#!/usr/bin/env bash
# GPU run 233: decode_two_stage with the residual as one sum a step (shares added by reduction,
# no separate delta) and the cluster barrier arrivals in parallel (mode 4: serial, as before).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts3.txt
