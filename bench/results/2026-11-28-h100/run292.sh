#!/usr/bin/env bash
# GPU run 292 (forty-second session): where the decoder kernel's warps stall, per instruction.
# ncu's WarpStateStats, SourceCounters (sampled stall reasons per SASS instruction) and
# SchedulerStats sections over one launch of grape_decoder (main 98584e2, decode_step at position
# 128, 5 rows); the report, its details page and its source page (SASS, csv).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
$N --version | tail -1
timeout 300 $N --clock-control none --cache-control none --section WarpStateStats --section SourceCounters \
  --section SchedulerStats --section LaunchStats -k grape_decoder --launch-skip 5 --launch-count 1 -o $R/run292 \
  $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 6 > $R/run292-ncu.log 2>&1
echo "ncu rc=$? $(( $(date +%s) - t0 )) s"; tail -3 $R/run292-ncu.log
$N -i $R/run292.ncu-rep --page details > $R/run292-details.txt 2>&1; echo "details rc=$?"
$N -i $R/run292.ncu-rep --page source --csv --print-source sass > $R/run292-source.csv 2>&1; echo "source rc=$?"
head -c 600 $R/run292-source.csv; echo; wc -l $R/run292-source.csv
grep -iE "stall|warp cycles|issue|eligible|active" $R/run292-details.txt | head -40
gzip $R/run292-source.csv
echo "total $(( $(date +%s) - t0 )) s"
