#!/usr/bin/env bash
# GPU run 186: ncu --set full on one layer of decode_step (eager launches 2..7: q/k/v GEMV, the
# sibling cache update, attention, attn c_proj, c_fc, mlp c_proj) with SASS stall samples, to see
# what each kernel's ~10 us (run 185, cold L2, base clock) is made of.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k
$C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/warm > /dev/null
for id in 2 3 4 5 6 7; do
  timeout 90 ncu --launch-skip $id --launch-count 1 --set full --import-source yes -o $D/l$id -f \
    $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/nf > $D/ncu$id.log 2>&1
  echo "ncu $id rc $? $(( $(date +%s) - t0 )) s"
  ncu -i $D/l$id.ncu-rep --page details > $R/run186-details-$id.txt 2>&1
  grep -E "Duration|DRAM Through|Registers Per|Issued Warp|No Eligible|Achieved Active|Warp Cycles Per Issued|Executed Instructions  " $R/run186-details-$id.txt | head -9 | sed "s/^/$id: /"
  ncu -i $D/l$id.ncu-rep --page source --csv --print-source sass > $D/s$id.csv 2>/dev/null
  python3 - $D/s$id.csv > $R/run186-sass-$id.txt <<'PY'
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
  head -1 $R/run186-sass-$id.txt
done
gzip -f $R/run186-sass-*.txt
echo "total $(( $(date +%s) - t0 )) s"
