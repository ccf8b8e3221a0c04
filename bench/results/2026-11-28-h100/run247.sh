#!/usr/bin/env bash
# GPU run 247: decode_two_stage's best configuration against itself with the past keys/values read
# from global memory (MK_KV_GLOBAL=1, put into L2 a step ahead: what contexts longer than the ring
# need) and with two-pass layer-norm statistics (MK_LN2=1, what the product needs).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1
for v in "" "MK_LN2=1" "MK_KV_GLOBAL=1" "MK_KV_GLOBAL=1 MK_LN2=1" ""; do
  echo "== ${v:-best}" | tee -a $R/ts17.txt
  env $v timeout 40 $C/decode_two_stage 200 2>&1 | grep -E "grid|check \(first|pace 250 ns, lm_head items in L2 4: |span|   A  |   B  |   lm |layer" | tee -a $R/ts17.txt
done
