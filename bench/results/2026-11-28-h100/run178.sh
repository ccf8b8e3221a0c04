#!/usr/bin/env bash
# GPU run 178 (diagnostic): beam search's scan sequence (eager launch 112, GRAPE_TUNE=0) under ncu
# --set full with the finest warp sampling (every 32 cycles), with GRAPE_SEQUENCE_WARP=0 and with
# warp runs on: where warp 0's time goes (run 177: warp runs cut a trip's block barriers 31 -> 13
# and inlined 20 bodies, and the scan's time did not move).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/kc
t0=$(date +%s)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32))"
BEAM=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry beam_search --input prompt=$D/prompt.npy --executor eager)
for m in 0 on; do
  GRAPE_SEQUENCE_WARP=$m $C/grape run "${BEAM[@]}" --output $D/warm > /dev/null
  GRAPE_SEQUENCE_WARP=$m timeout 200 ncu --launch-skip 112 --launch-count 1 --set full --warp-sampling-interval 0 --import-source yes -o $D/scan-$m -f \
    $C/grape run "${BEAM[@]}" --output $D/o-$m > $D/ncu-$m.log 2>&1
  echo "ncu $m rc $? $(( $(date +%s) - t0 )) s"; tail -3 $D/ncu-$m.log
  ncu -i $D/scan-$m.ncu-rep --page details > $R/run178-scan-details-$m.txt 2>&1
  ncu -i $D/scan-$m.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $R/run178-scan-sass-$m.csv.gz
  grep -E "Duration|Grid Size|Block Size|Executed Instructions  |Warp Cycles Per Issued" $R/run178-scan-details-$m.txt | head -8
done
echo "total $(( $(date +%s) - t0 )) s"
