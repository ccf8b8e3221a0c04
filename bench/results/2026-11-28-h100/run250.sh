#!/usr/bin/env bash
# GPU run 250: decode_two_stage's best configuration against itself with stage A's attention split
# over the cluster by position (MK_SPLIT=1, flash-decoding style: every block 16 past positions of
# all 5 rows), twice each, alternating.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1
for v in "" "MK_SPLIT=1" "" "MK_SPLIT=1"; do
  echo "== ${v:-best}" | tee -a $R/ts20.txt
  env $v timeout 40 $C/decode_two_stage 200 2>&1 | grep -E "grid|check \(first|check \(seventh|pace 250 ns, lm_head items in L2 4: |span|   A  |   B  |   lm |layer" | tee -a $R/ts20.txt
done
