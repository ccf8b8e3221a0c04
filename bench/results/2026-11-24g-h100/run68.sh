#!/usr/bin/env bash
# GPU run 68 (the head b69ffc4): Nsight Compute full sections on BERT b=16's kernels 1-7 of the
# third call (q/k/v, attention, out-projection, layer norm, FFN up with gelu), eager.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r68; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda)
$B/grape bench "${A[@]}" --executor graph --warmup 10 --iters 100 2>&1 | grep -E "latency|autotuning"
timeout 300 ncu --set full --import-source no --clock-control none --cache-control none --launch-skip $((109*3+1)) --launch-count 7 -o $R/bert16 \
  $B/grape bench "${A[@]}" --executor eager --warmup 2 --iters 2 > $R/ncu.log 2>&1
tail -3 $R/ncu.log
ncu --import $R/bert16.ncu-rep --page details --csv > $R/details.csv 2>&1
python3 - $R/details.csv <<'PY' > $R/summary.txt
import csv, sys
rows = list(csv.DictReader([l for l in open(sys.argv[1]) if l.startswith('"')]))
want = ["Duration", "Registers Per Thread", "Achieved Occupancy", "Executed Instructions", "Issue Slots Busy",
        "Memory Throughput", "DRAM Throughput", "Compute (SM) Throughput", "L1/TEX Hit Rate", "L2 Hit Rate",
        "Block Size", "Grid Size", "Dynamic Shared Memory Per Block", "Theoretical Occupancy", "Warp Cycles Per Issued Instruction"]
by = {}
for r in rows:
    if r["Metric Name"] in want: by.setdefault(r["ID"], {})[r["Metric Name"]] = r["Metric Value"] + " " + r["Metric Unit"]
for i, m in by.items():
    print(i, "; ".join(f"{k}={m.get(k, '')}" for k in want))
PY
cat $R/summary.txt
grep -iE "stall|warp state" $R/details.csv | grep -iE '"(1|5|7)",' | head -0
tar czf $OUT/r68.tgz -C /tmp r68
echo "total $(( $(date +%s) - t0 )) s"
