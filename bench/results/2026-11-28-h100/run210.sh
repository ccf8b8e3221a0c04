#!/usr/bin/env bash
# GPU run 210 (thirty-third session): weights loaded with an L2 evict-first policy (GRAPE_WEIGHT_EVICT_FIRST=1:
# gemv.cuh's stream loads, the vocabulary projection's cp.async) against the default, so that the
# KV cache, biases and norm scales stay in L2 from one step to the next. GPU tests under e1;
# decode_step graph A/B (3 alternating rounds), beam_search, generate (2 each); ncu sums (cold caches:
# should not move).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
for i in 0 1 2 3; do
  GRAPE_WEIGHT_EVICT_FIRST=1 GRAPE_CACHE_DIR=/tmp/gte GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*:GpuParity.Sibling*:RowVariants.*:GpuParity.Gpt2*' > $R/run210-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run210-gpu-tests.[0-3].log > $R/run210-gpu-tests.log; rm $R/run210-gpu-tests.[0-3].log
echo "gpu tests (e1) $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run210-gpu-tests.log
gzip -f $R/run210-gpu-tests.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
v() { case $1 in e0) echo "GRAPE_CACHE_DIR=$D/k2";; e1) echo "GRAPE_WEIGHT_EVICT_FIRST=1 GRAPE_CACHE_DIR=$D/k3";; esac; }
for x in e0 e1; do env $(v $x) $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/o-$x > /dev/null 2>&1; done
python3 -c "import numpy as np; a=np.load('$D/o-e0/out0.npy'); b=np.load('$D/o-e1/out0.npy'); print('decode logits e1 vs e0:', 'identical' if np.array_equal(a,b) else 'max diff %g' % np.abs(a.astype(float)-b).max())"
for round in 1 2 3; do
  for x in e0 e1; do
    env $(v $x) $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run210-decode.txt
for x in e0 e1 e0 e1; do
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry beam_search --input prompt=$D/prompt.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run210-decode.txt
echo "benches $(( $(date +%s) - t0 )) s"
for x in e0 e1; do
  env $(v $x) timeout 100 ncu --metrics gpu__time_duration.sum --csv $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/n > $D/ncu-$x.csv 2> /dev/null
  python3 - $D/ncu-$x.csv $x <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
h = rows[0]; rows = rows[1:]
mi, vi, ui = h.index("Metric Name"), h.index("Metric Value"), h.index("Metric Unit")
t = [float(r[vi].replace(",", "")) * (1e-3 if r[ui] in ("nsecond", "ns") else 1) for r in rows if r[mi] == "gpu__time_duration.sum"]
print(sys.argv[2], "ncu kernels", len(t), "sum us %.1f" % sum(t), "first layer:", " ".join("%.2f" % x for x in t[2:7]))
PY
done | tee $R/run210-ncu.txt
echo "total $(( $(date +%s) - t0 )) s"
