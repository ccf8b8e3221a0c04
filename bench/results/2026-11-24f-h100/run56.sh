#!/usr/bin/env bash
# GPU run 56 (attention_mma: keys split over two warps per row group, 8 warps): the whole GPU suite;
# bench_kernels --ncu on the attention shapes; BERT b=1/b=16 forward (graph).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r56; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 400 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only attention --ncu > $R/kernels-attention.txt 2>&1
cat $R/kernels-attention.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { echo "== $*" | cut -c1-120; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
for bs in 1 16; do
python3 -c "
import numpy as np; r=np.random.default_rng(1)
for n in 'qkv': np.save(f'$D/{n}$bs.npy', r.standard_normal(($bs,12,128,64)).astype(np.float16))"
A=(bench $B/attn_b$bs.grp --backend cuda --executor eager --input q=$D/q$bs.npy --input k=$D/k$bs.npy --input v=$D/v$bs.npy)
ncu --set full --import-source no --kernel-name regex:grape --launch-skip 3 --launch-count 1 -o $R/attn$bs $B/grape "${A[@]}" --warmup 2 --iters 2 > $R/ncu$bs.log 2>&1
ncu --import $R/attn$bs.ncu-rep --page details > $R/details$bs.txt 2>&1
ncu --import $R/attn$bs.ncu-rep --page source --csv --print-source sass > $R/sass$bs.csv 2>&1
echo "== b=$bs"
grep -E "Duration|Registers Per|Achieved Occupancy|Theoretical Occ|Executed Ipc A|No Eligible|Warp Cycles Per Issued|Executed Instructions  |Block Limit|Waves Per SM" $R/details$bs.txt | head -30
python3 - $R/sass$bs.csv <<'PY'
import csv, sys, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if 'Source' in r)
h = rows[hdr]; data = [r for r in rows[hdr + 1:] if len(r) == len(h)]
def col(name): return next(i for i, c in enumerate(h) if c.startswith(name))
src = col('Source'); st = col('Warp Stall Sampling (All'); ie = col('Instructions Executed')
f = lambda r, c: float((r[c] or '0').replace(',', ''))
tot = sum(f(r, ie) for r in data); sst = sum(f(r, st) for r in data)
print('instructions', tot, 'stall samples', sst)
ops = collections.Counter()
for r in data:
    t = [x for x in r[src].split() if not x.startswith('@')]
    ops[t[0].split('.')[0] if t else '?'] += f(r, ie)
print('by opcode:', ', '.join(f'{k} {v/tot*100:.1f}%' for k, v in ops.most_common(25)))
print('top stalls:')
for r in sorted(data, key=lambda r: -f(r, st))[:20]: print(f'{f(r, st):8.0f} {f(r, ie):9.0f} {r[src][:100]}')
PY
done
rm -f $R/*.ncu-rep
tar czf $OUT/r56.tgz -C /tmp r56
echo "total $(( $(date +%s) - t0 )) s"
