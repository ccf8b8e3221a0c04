#!/usr/bin/env bash
# GPU run 205 (thirty-second session), measurements for the next session on the final code: (1)
# the beam logic alone (bench/beam/beam_logic.grp) under `grape bench --profile` (eager): where its
# 0.128 ms per token goes; (2) decode_step's kernels under --profile; (3) ncu --set full with SASS
# stall samples of layer 0's q/k/v GEMV (it now writes the cache rows too) and c_fc.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0
D=$(mktemp -d)
export GRAPE_CACHE_DIR=$D/k
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/prompt.npy', r.integers(0, 50256, (1, 64)).astype(np.int32)); lg=r.standard_normal((5, 50257)).astype(np.float16); lg[:, 50256]=-60000; np.save('$D/logits.npy', lg)"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
timeout 120 $C/grape bench bench/beam/beam_logic.grp --backend cuda --entry beam_logic --input prompt=$D/prompt.npy --input logits=$D/logits.npy \
  --executor eager --warmup 1 --iters 3 --profile > $R/run205-beam-logic-profile.txt 2>&1
echo "beam logic profile rc $? $(( $(date +%s) - t0 )) s"; head -40 $R/run205-beam-logic-profile.txt
timeout 60 $C/grape bench bench/beam/beam_logic.grp --backend cuda --entry beam_logic --input prompt=$D/prompt.npy --input logits=$D/logits.npy \
  --executor graph --warmup 1 --iters 5 2>&1 | grep -E "latency|kernels" | tee -a $R/run205-beam-logic-profile.txt
timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --warmup 3 --iters 20 --profile > $R/run205-decode-profile.txt 2>&1
echo "decode profile rc $? $(( $(date +%s) - t0 )) s"; head -24 $R/run205-decode-profile.txt
for id in 2 5; do
  timeout 90 ncu --launch-skip $id --launch-count 1 --set full --import-source yes -o $D/l$id -f \
    $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/nf > $D/ncu$id.log 2>&1
  echo "ncu $id rc $? $(( $(date +%s) - t0 )) s"
  ncu -i $D/l$id.ncu-rep --page details > $R/run205-details-$id.txt 2>&1
  grep -E "Duration|DRAM Through|Registers Per|Issued Warp|No Eligible|Achieved Active|Warp Cycles Per Issued|Executed Instructions  |SM Active Cycles|Elapsed Cycles" $R/run205-details-$id.txt | head -12 | sed "s/^/$id: /"
  ncu -i $D/l$id.ncu-rep --page source --csv --print-source sass > $D/s$id.csv 2>/dev/null
  python3 - $D/s$id.csv > $R/run205-sass-$id.txt <<'PY'
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
  head -1 $R/run205-sass-$id.txt
done
gzip -f $R/run205-details-*.txt $R/run205-sass-*.txt
echo "total $(( $(date +%s) - t0 )) s"
