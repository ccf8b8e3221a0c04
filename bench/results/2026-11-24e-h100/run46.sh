#!/usr/bin/env bash
# GPU run 46: where the prefill attention kernel's (attention_mma.cuh) time goes: Nsight Compute
# full set with SASS source counters on BERT-shaped attention at b=1 (24 blocks, 23.8 us).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r46; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
python3 -c "
import numpy as np; r=np.random.default_rng(1)
for n in 'qkv': np.save(f'$D/{n}.npy', r.standard_normal((1,12,128,64)).astype(np.float16))"
A=(bench $B/attn_b1.grp --backend cuda --executor eager --input q=$D/q.npy --input k=$D/k.npy --input v=$D/v.npy)
$B/grape "${A[@]}" --warmup 5 --iters 20 | head -3
ncu --set full --import-source no --kernel-name regex:grape --launch-skip 3 --launch-count 1 -o $R/attn $B/grape "${A[@]}" --warmup 2 --iters 2 > $R/ncu.log 2>&1
ncu --import $R/attn.ncu-rep --page details > $R/details.txt 2>&1
ncu --import $R/attn.ncu-rep --page source --csv --print-source sass > $R/sass.csv 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Elapsed Cycles|SM Active|Executed Ipc|Issue Slots|No Eligible|Warp Cycles Per Issued|Local Memory|Dynamic Shared" $R/details.txt | head -30
python3 - <<'PY'
import csv
rows = list(csv.reader(open('/tmp/r46/sass.csv')))
hdr = next(i for i, r in enumerate(rows) if 'Source' in r)
h = rows[hdr]; data = rows[hdr + 1:]
def col(name):
    return next(i for i, c in enumerate(h) if c.startswith(name))
src = col('Source'); st = col('Warp Stall Sampling (All')
tot = sum(float(r[st] or 0) for r in data if len(r) > st)
print('stall samples', tot)
for r in sorted(data, key=lambda r: -float(r[st] or 0))[:25]:
    print(f'{float(r[st] or 0):8.0f} {r[src][:110]}')
PY
rm -f $R/*.ncu-rep
tar czf $OUT/r46.tgz -C /tmp r46
echo "total $(( $(date +%s) - t0 )) s"
