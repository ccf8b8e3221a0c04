#!/usr/bin/env bash
# GPU run 204 (thirty-second session), the final library code (folded updates + gemv_mma's pushed
# cluster sums): (1) compute-sanitizer racecheck + initcheck + memcheck over every example and
# control-flow case, eager; (2) the whole GPU suite, 4 shards; (3) decode_step graph (3 x 300
# calls), beam_search and generate; (4) every decode_step kernel under ncu (one eager call).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 200 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-eager --sanitizer $S --tools racecheck,initcheck,memcheck \
  --executors eager --jobs 8 > $R/run204-sanitize-eager.log 2>&1
echo "sanitize eager rc=$? $(( $(date +%s) - t0 )) s"; cat $R/san-eager/summary.txt 2>/dev/null; cp $R/san-eager/summary.txt $R/run204-sanitize-eager-summary.txt 2>/dev/null
grep -l "ERROR SUMMARY: [1-9]" -r $R/san-eager 2>/dev/null | head -20 > $R/failing.txt; cat $R/failing.txt
tar czf $R/run204-san-failing.tgz $(cat $R/failing.txt) 2>/dev/null; rm -rf $R/san-eager $R/failing.txt
gzip -f $R/run204-sanitize-eager.log
export GRAPE_CACHE_DIR=/tmp/gt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $C/grape_gpu_tests --gtest_color=no > $R/run204-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run204-gpu-tests.[0-3].log > $R/run204-gpu-tests.log; rm $R/run204-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run204-gpu-tests.log
gzip -f $R/run204-gpu-tests.log
echo "gpu tests $(( $(date +%s) - t0 )) s"
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k
for round in 1 2 3; do
  $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step round $round: /"
done | tee $R/run204-decode.txt
timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry beam_search --input prompt=$D/prompt.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search: /" | tee -a $R/run204-decode.txt
timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate: /" | tee -a $R/run204-decode.txt
left=$(( 575 - ($(date +%s) - t0) ))
echo "ncu with ${left} s left"
if [ $left -gt 40 ]; then
  timeout $left ncu --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size \
    --csv $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/n > $D/ncu.csv 2> $D/ncu.err
  echo "ncu rc $? $(( $(date +%s) - t0 )) s"; tail -2 $D/ncu.err
  python3 - $D/ncu.csv <<'PY' | tee $R/run204-ncu-summary.txt
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; rows = rows[1:]
ki, mi, vi, ui = h.index("Kernel Name"), h.index("Metric Name"), h.index("Metric Value"), h.index("Metric Unit")
idi = h.index("ID")
t = collections.OrderedDict()
for r in rows:
    if r[mi] == "gpu__time_duration.sum":
        v = float(r[vi].replace(",", "")); u = r[ui]
        t[r[idi]] = (r[ki], v / 1000 if u == "nsecond" else v if u == "usecond" else v * 1000)
print("kernels", len(t), "sum us %.1f" % sum(v for _, v in t.values()))
for i, (k, v) in list(t.items())[:14]: print(i, k[:60], "%.2f" % v)
PY
  gzip -c $D/ncu.csv > $R/run204-ncu.csv.gz
fi
echo "total $(( $(date +%s) - t0 )) s"
