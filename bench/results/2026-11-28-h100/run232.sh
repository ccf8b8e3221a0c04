#!/usr/bin/env bash
# GPU run 232: decode_two_stage with attention on 256 threads, mlp c_proj partial on the tensor
# cores, finer stamps, and mode 2 (the next item prefetched into L2); no Grape run this time.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts2.txt
