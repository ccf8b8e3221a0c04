#!/usr/bin/env bash
# GPU run 251: run 250 again with the weight stream paced by bytes, not by copy (run 250 paced
# MK_SPLIT's 2 KB pieces as 8 KB ones): the best configuration against MK_SPLIT=1, twice each.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1
for v in "" "MK_SPLIT=1" "" "MK_SPLIT=1"; do
  echo "== ${v:-best}" | tee -a $R/ts21.txt
  env $v timeout 40 $C/decode_two_stage 200 2>&1 | grep -E "grid|check \(first|check \(seventh|pace 250 ns, lm_head items in L2 4: |span|   A  |   B  |   lm |layer" | tee -a $R/ts21.txt
done
