#!/usr/bin/env bash
# GPU run 185 (thirtieth session, the head 6e6192f): (1) run 184's sweep (the new control-flow case
# under initcheck and memcheck, eager and graph); (2) decode_step's kernels under ncu, one eager call
# (issue 7's measure: each kernel's duration and DRAM bytes); (3) ncu --set full with SASS stall
# samples of the decode attention kernel and the first c_fc GEMV; (4) decode_step graph, 3 rounds.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 60 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools initcheck,memcheck \
  --executors eager,graph --jobs 8 --filter loop_init_computed > $R/run185-sanitize.log 2>&1
echo "sanitize rc=$? $(( $(date +%s) - t0 )) s"; head -8 $R/san/summary.txt 2>/dev/null
cp $R/san/summary.txt $R/run185-sanitize-summary.txt 2>/dev/null; rm -rf $R/san
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k
$C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/warm > /dev/null
timeout 150 ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
  --csv $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/n1 > $R/run185-decode-kernels.csv 2> $D/ncu1.err
echo "ncu rc $? $(( $(date +%s) - t0 )) s"; tail -3 $D/ncu1.err
python3 - $R/run185-decode-kernels.csv > $R/run185-decode-summary.txt <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; body = rows[1:]
I = {c: i for i, c in enumerate(h)}
k = collections.OrderedDict()
for r in body:
    key = (r[I["ID"]], r[I["Kernel Name"]])
    k.setdefault(key, {})[r[I["Metric Name"]]] = r[I["Metric Value"]].replace(",", "")
tot = 0.0; byk = collections.defaultdict(lambda: [0, 0.0, 0.0])
for (i, n), m in k.items():
    t = float(m.get("gpu__time_duration.sum", 0)) / 1000.0  # ns -> us
    b = (float(m.get("dram__bytes_read.sum", 0)) + float(m.get("dram__bytes_write.sum", 0))) / 1e6
    tot += t
    print(f"{i:>4} {t:8.2f} us {b:8.3f} MB {b/ max(t,1e-9)*1e-3*1e3:8.0f} GB/s grid {m.get('launch__grid_size')} x {m.get('launch__block_size')} regs {m.get('launch__registers_per_thread')} occ {m.get('sm__warps_active.avg.pct_of_peak_sustained_active')}  {n[:90]}")
    kind = n.split("_k", 1)[-1].split("_", 1)[-1][:40] if "_k" in n else n[:40]
    byk[kind][0] += 1; byk[kind][1] += t; byk[kind][2] += b
print(f"kernels {len(k)}, sum {tot:.1f} us")
for kind, (c, t, b) in sorted(byk.items(), key=lambda x: -x[1][1]):
    print(f"  {kind:40s} {c:3d} launches {t:8.1f} us  {b:8.1f} MB")
PY
tail -12 $R/run185-decode-summary.txt
for pat in "_matmul" "_gelu"; do
  timeout 120 ncu -k regex:"$pat\$" --launch-count 1 --set full --import-source yes -o $D/f$pat -f \
    $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/nf > /dev/null 2>&1
  ncu -i $D/f$pat.ncu-rep --page details > $R/run185-details$pat.txt 2>&1
  grep -E "Grid Size|Duration|DRAM Through|Registers Per|Issued Warp|No Eligible|Active Warps|Warp Cycles Per Issued" $R/run185-details$pat.txt | head -10 | sed "s/^/$pat: /"
  ncu -i $D/f$pat.ncu-rep --page source --csv --print-source sass > $D/s.csv 2>/dev/null
  python3 - $D/s.csv > $R/run185-sass$pat.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if any("Source" == c for c in r)), 0)
h = rows[hdr]; body = rows[hdr + 1:]
def idx(name):
    for i, c in enumerate(h):
        if c.strip() == name: return i
si = idx("Source"); samp = idx("Warp Stall Sampling (All Samples)") or idx("Sampling Data (All)")
if si is None or samp is None: print("no columns", h[:10]); sys.exit()
tot = sum(float(r[samp] or 0) for r in body if len(r) > samp)
print("instructions", len(body), "samples", tot)
acc = 0
for n, r in enumerate(body):
    s = float(r[samp] or 0) if len(r) > samp else 0
    acc += s
    print(f"{n:5d} {s / max(tot, 1) * 100:5.1f}% cum {acc / max(tot,1)*100:5.1f}%  {r[si][:100]}")
PY
done
echo "ncu full $(( $(date +%s) - t0 )) s"
for round in 1 2 3; do
  $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step graph round $round: /"
done
echo "total $(( $(date +%s) - t0 )) s"
