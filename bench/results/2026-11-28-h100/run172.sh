#!/usr/bin/env bash
# GPU run 172: (1) GPU tests touching copies, slice writes, sequences and GPT-2; (2) generate with
# the autotuner off, GRAPE_SIBLING_UPDATES=0/1 (run 171: the two modes differ only through their
# kernel caches' tuning decisions?); (3) copy kernels with four 16-byte chunks per thread against
# one (GRAPE_COPY_UNROLL=1): beam_search graph, tokens compared, eager profile of the takes;
# (4) ncu --set full on decode_step's lm_head with SASS-level stall samples.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
F='GpuParity.CopyKernelsOfEveryLengthAndAlignment:GpuParity.RowAndSliceTemplates:GpuParity.ControlFlowCases:GpuParity.Gpt2*:BlockSequences.*:DeviceInputs*:MonoExecutor.Gpt2DecodeSteps'
for i in 0 1 2; do
  GTEST_TOTAL_SHARDS=3 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run172-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run172-gpu-tests.log
grep -B2 -A12 "Failure" $R/run172-gpu-tests.log | head -40
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
for m in 0 1; do
  GRAPE_TUNE=0 GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kt$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --output $D/gen-notune$m > /dev/null
done
python3 -c "
import numpy as np
a=np.load('$D/gen-notune0/out0.npy'); b=np.load('$D/gen-notune1/out0.npy'); print('generate, tuner off: sibling updates 0 vs 1 tokens identical:', (a==b).all(), int((a!=b).sum()), 'differ')"
for u in 1 4; do
  GRAPE_COPY_UNROLL=$u GRAPE_CACHE_DIR=$D/ku$u $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-u$u > /dev/null
done
python3 -c "
import numpy as np
for o in ('out0', 'out1'):
  a=np.load('$D/beam-u1/%s.npy' % o); b=np.load('$D/beam-u4/%s.npy' % o); print('beam_search copy unroll 1 vs 4', o, 'identical:', (a==b).all())"
for round in 1 2; do
  for u in 1 4; do
    GRAPE_COPY_UNROLL=$u GRAPE_CACHE_DIR=$D/ku$u $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search graph unroll=$u round $round: /"
  done
done
for u in 1 4; do
  GRAPE_COPY_UNROLL=$u GRAPE_CACHE_DIR=$D/ku$u $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --profile --warmup 1 --iters 2 2>&1 | grep -E "_take|block sequence 15|latency" | head -5 | sed "s/^/unroll=$u: /"
done
echo "benches $(( $(date +%s) - t0 )) s"
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/kn timeout 240 ncu --launch-skip 74 --launch-count 1 --set full --import-source yes -o $D/lm -f \
  $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/ncu-lm > $D/ncu.log 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
ncu -i $D/lm.ncu-rep --page details > $R/run172-lm-head-details.txt 2>&1
grep -E "Grid Size|Duration|DRAM Through|Registers Per|Issued Warp|No Eligible|Active Warps|Warp Cycles Per Issued" $R/run172-lm-head-details.txt | head -12
ncu -i $D/lm.ncu-rep --page source --csv --print-source sass > $D/lm-sass.csv 2>/dev/null
python3 - $D/lm-sass.csv > $R/run172-lm-head-sass-top.txt <<'PY'
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((i for i, r in enumerate(rows) if any("Source" == c for c in r)), 0)
h = rows[hdr]; body = rows[hdr + 1:]
def idx(name):
    for i, c in enumerate(h):
        if c.strip() == name: return i
    return None
si = idx("Source"); samp = idx("Warp Stall Sampling (All Samples)") or idx("Sampling Data (All)")
print("columns:", h[:12])
if si is None or samp is None:
    print("no source/sample columns"); sys.exit()
tot = sum(float(r[samp] or 0) for r in body if len(r) > samp)
print("instructions", len(body), "samples", tot)
stall_cols = [i for i, c in enumerate(h) if c.startswith("stall_") or "Stall" in c][:40]
top = sorted(body, key=lambda r: -float(r[samp] or 0) if len(r) > samp else 0)[:45]
for r in top:
    print(f"{float(r[samp] or 0) / max(tot, 1) * 100:5.1f}%  {r[si][:110]}")
PY
head -60 $R/run172-lm-head-sass-top.txt
echo "total $(( $(date +%s) - t0 )) s"
