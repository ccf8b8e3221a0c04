#!/usr/bin/env bash
# GPU run 195 (thirty-first session): run 194 again with gemv_mma.cuh's K splits as one
# thread-block cluster per tile (their sums added through distributed shared memory instead of
# the scratch area and a counter), plus ncu --set full with SASS stall samples of the q/k/v and
# attn c_proj GEMVs (eager launches 2 and 5).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
F='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.Gpt2*:GpuParity.Sibling*:MonoExecutor.Gpt2DecodeSteps:MonoExecutor.MlpWithChangingRows:Autotune.*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 250 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
wait
cat $D/gt*.log > $R/run195-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run195-gpu-tests.log
grep -B2 -A12 "Failure" $R/run195-gpu-tests.log | head -60
gzip -f $R/run195-gpu-tests.log
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
for m in 0 1; do
  for e in DEC BEAM GEN; do
    eval "A=(\"\${$e[@]}\")"
    GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${A[@]}" --executor graph --output $D/$e-$m > /dev/null
  done
done
python3 -c "
import numpy as np
for e in ('DEC', 'BEAM', 'GEN'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-0/%s.npy' % (e, o))
    except Exception: continue
    b = np.load('$D/%s-1/%s.npy' % (e, o))
    if a.dtype.kind == 'f': print(e, o, a.shape, 'max|d|', float(np.abs(a.astype(np.float64) - b).max()), 'argmax equal', (a.reshape(a.shape[0], -1).argmax(-1) == b.reshape(b.shape[0], -1).argmax(-1)).all())
    else: print(e, o, a.shape, 'equal', int((a == b).sum()), 'of', a.size)"
echo "outputs $(( $(date +%s) - t0 )) s"
for round in 1 2 3; do
  for m in 0 1; do
    GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step mma=$m round $round: /"
  done
done
for m in 0 1; do
  GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search mma=$m: /"
  GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate mma=$m: /"
done
echo "benches $(( $(date +%s) - t0 )) s"
for m in 1 0; do
  GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m timeout 150 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    --csv $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/n$m > $D/k$m.csv 2> $D/ncu$m.err
  echo "ncu mma=$m rc $? $(( $(date +%s) - t0 )) s"; tail -2 $D/ncu$m.err
  python3 - $D/k$m.csv > $R/run195-decode-mma$m.txt <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; body = rows[1:]
I = {c: i for i, c in enumerate(h)}
k = collections.OrderedDict()
for r in body:
    key = (r[I["ID"]], r[I["Kernel Name"]])
    k.setdefault(key, {})[r[I["Metric Name"]]] = r[I["Metric Value"]].replace(",", "")
tot = 0.0
for (i, n), m in k.items():
    t = float(m.get("gpu__time_duration.sum", 0)) / 1000.0
    b = (float(m.get("dram__bytes_read.sum", 0)) + float(m.get("dram__bytes_write.sum", 0))) / 1e6
    tot += t
    print(f"{i:>4} {t:8.2f} us {b:8.3f} MB grid {m.get('launch__grid_size')} x {m.get('launch__block_size')} regs {m.get('launch__registers_per_thread')} occ {m.get('sm__warps_active.avg.pct_of_peak_sustained_active')}")
print(f"kernels {len(k)}, sum {tot:.1f} us")
PY
  head -9 $R/run195-decode-mma$m.txt | sed "s/^/mma=$m /"; tail -1 $R/run195-decode-mma$m.txt
done
for id in 2 5; do
  GRAPE_GEMV_MMA=1 GRAPE_CACHE_DIR=$D/k1 timeout 90 ncu --launch-skip $id --launch-count 1 --set full --import-source yes -o $D/l$id -f \
    $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/nf > $D/ncu$id.log 2>&1
  echo "ncu $id rc $? $(( $(date +%s) - t0 )) s"
  ncu -i $D/l$id.ncu-rep --page details > $R/run195-details-$id.txt 2>&1
  grep -E "Duration|DRAM Through|Registers Per|Issued Warp|No Eligible|Achieved Active|Warp Cycles Per Issued|Executed Instructions  |SM Active Cycles|Elapsed Cycles" $R/run195-details-$id.txt | head -12 | sed "s/^/$id: /"
  ncu -i $D/l$id.ncu-rep --page source --csv --print-source sass > $D/s$id.csv 2>/dev/null
  python3 - $D/s$id.csv > $R/run195-sass-$id.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if any("Source" == c for c in r)), 0)
h = rows[hdr]; body = rows[hdr + 1:]
def idx(name):
    for i, c in enumerate(h):
        if c.strip() == name: return i
si = idx("Source"); samp = idx("Warp Stall Sampling (All Samples)") or idx("Sampling Data (All)")
if si is None or samp is None: print("no columns", rows[:3]); sys.exit()
tot = sum(float(r[samp] or 0) for r in body if len(r) > samp)
print("instructions", len(body), "samples", tot)
acc = 0
for n, r in enumerate(body):
    s = float(r[samp] or 0) if len(r) > samp else 0
    acc += s
    print(f"{n:5d} {s / max(tot, 1) * 100:5.1f}% cum {acc / max(tot,1)*100:5.1f}%  {r[si][:100]}")
PY
  head -1 $R/run195-sass-$id.txt
done
gzip -f $R/run195-details-*.txt $R/run195-sass-*.txt
echo "total $(( $(date +%s) - t0 )) s"
