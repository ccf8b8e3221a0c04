#!/usr/bin/env bash
# GPU run 93 (the head): bench/bert/bench_bert.py end to end (its table is what bench/run.sh
# prints); Nsight Compute full sections + SASS stall summary of BERT's attention kernel (kernel 2
# of a call: embed LN, q/k/v, attention) at batch 16 and 1 — the largest gap to the peers left.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc93
B=build-carry; R=/tmp/r93; D=/tmp/bert; mkdir -p $R $D $OUT
t0=$(date +%s)
python3 bench/bert/bench_bert.py --grape $B/grape --out $D 2>&1 | grep -v Warn | grep -v _warn_once
echo "bench_bert rc=${PIPESTATUS[0]} $(( $(date +%s) - t0 )) s"
cp $D/bert_results.md $OUT/
for b in 16 1; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  timeout 200 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((85*3+2)) --launch-count 1 -o $R/a$b \
    $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu$b.log 2>&1
  ncu --import $R/a$b.ncu-rep --page details --csv > $R/a$b.details.csv 2>&1
  ncu --import $R/a$b.ncu-rep --page source --csv --print-source sass > $R/a$b.sass.csv 2>&1
  python3 bench/ncu_sass_summary.py $R/a$b.sass.csv > $OUT/attention-b$b-sass-summary.txt 2>&1
  grep -E '"(Duration|Elapsed Cycles|Registers Per Thread|Achieved Occupancy|Theoretical Occupancy|Memory Throughput|DRAM Throughput|L2 Hit Rate|Grid Size|Block Size|Dynamic Shared Memory Per Block|Issue Slots Busy|Executed Ipc Active)"' $R/a$b.details.csv | cut -d, -f12- > $OUT/attention-b$b-details.txt
  echo "== attention b=$b"; cat $OUT/attention-b$b-details.txt | head -16; head -30 $OUT/attention-b$b-sass-summary.txt
done
echo "total $(( $(date +%s) - t0 )) s"
