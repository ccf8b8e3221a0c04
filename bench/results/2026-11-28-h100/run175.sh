#!/usr/bin/env bash
# GPU run 175 (diagnostic, the head): where beam search's candidate scan spends its ~53 us per token.
# The scan is one block-sequence kernel (1 block of 256 threads running ~20 kernel bodies per trip,
# 5-6 trips). ncu pass 1 lists the first launches of an eager beam_search (grid and duration) to
# find the first scan; pass 2 profiles that launch with --set full and SASS-level stall samples.
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
$C/grape run "${BEAM[@]}" --output $D/warm > /dev/null
timeout 150 ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size --launch-count 400 \
  $C/grape run "${BEAM[@]}" --output $D/o1 > $D/pass1.csv 2>/dev/null
echo "pass 1 rc $? $(( $(date +%s) - t0 )) s"
idx=$(python3 - $D/pass1.csv <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
I = hdr.index("ID"); M = hdr.index("Metric Name"); V = hdr.index("Metric Value")
k = {}
for r in rows:
    k.setdefault(int(r[I]), {})[r[M]] = r[V].replace(",", "")
for i in sorted(k):
    m = k[i]
    if m.get("launch__grid_size") == "1" and float(m.get("gpu__time_duration.sum", 0)) > 20000:
        print(i); break
PY
)
echo "first scan launch: $idx"
python3 - $D/pass1.csv > $R/run175-launches.txt <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = rows[0]; rows = rows[1:]
I = hdr.index("ID"); M = hdr.index("Metric Name"); V = hdr.index("Metric Value")
k = {}
for r in rows:
    k.setdefault(int(r[I]), {})[r[M]] = r[V]
for i in sorted(k):
    m = k[i]; print(i, m.get("launch__grid_size"), m.get("launch__block_size"), m.get("gpu__time_duration.sum"))
PY
if [ -n "$idx" ]; then
  timeout 200 ncu --launch-skip $idx --launch-count 1 --set full --import-source yes -o $D/scan -f \
    $C/grape run "${BEAM[@]}" --output $D/o2 > $D/ncu2.log 2>&1
  echo "pass 2 rc $? $(( $(date +%s) - t0 )) s"
  ncu -i $D/scan.ncu-rep --page details > $R/run175-scan-details.txt 2>&1
  ncu -i $D/scan.ncu-rep --page source --csv --print-source sass > $R/run175-scan-sass.csv 2>/dev/null
  grep -E "Duration|Grid Size|Issued Warp|No Eligible|Executed Instructions  |Warp Cycles Per Issued" $R/run175-scan-details.txt | head
  ls -la $R
fi
echo "total $(( $(date +%s) - t0 )) s"
