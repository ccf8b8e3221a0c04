#!/usr/bin/env bash
# GPU run 170: sibling updates (a layer's key and value cache writes as one kernel, decode_step 87 ->
# 75 kernels). One binary, GRAPE_SIBLING_UPDATES=0/1 with separate kernel caches: decode_step,
# beam_search and generate outputs compared, then graph times alternating; an nsys trace of the
# decode_step graph (per-kernel durations and gaps inside one replay); the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
export GRAPE_COMPILE_WORKER=$C/grape
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
t0=$(date +%s)
for m in 0 1; do
  for e in DEC BEAM GEN; do
    eval "E=(\"\${$e[@]}\")"
    GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${E[@]}" --output $D/$e$m > /dev/null
  done
done
echo "built + ran $(( $(date +%s) - t0 )) s"
python3 -c "
import numpy as np, glob
for e in ('DEC', 'BEAM', 'GEN'):
  for f in sorted(glob.glob('$D/%s0/*.npy' % e)):
    a=np.load(f); b=np.load(f.replace('%s0' % e, '%s1' % e)); print(e, f.split('/')[-1], 'identical:', a.shape == b.shape and (a==b).all())"
for round in 1 2 3; do
  for m in 0 1; do
    GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 500 2>&1 | grep -E "latency|kernels per" | tr '\n' ' ' | sed "s/^/decode sib=$m round $round: /"; echo
  done
done
for round in 1 2; do
  for m in 0 1; do
    GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search sib=$m round $round: /"
    GRAPE_SIBLING_UPDATES=$m GRAPE_CACHE_DIR=$D/kc$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate sib=$m round $round: /"
  done
done
echo "benches done $(( $(date +%s) - t0 )) s"
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}"
if [ -n "$NSYS" ]; then
  GRAPE_CACHE_DIR=$D/kc1 timeout 120 $NSYS profile --cuda-graph-trace=node -o $D/dec1 --force-overwrite true $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 20 > $D/nsys.log 2>&1
  echo "nsys rc $?"
  timeout 120 $NSYS stats --report cuda_gpu_trace --format csv --output $D/trace $D/dec1.nsys-rep > /dev/null 2>&1
  ls $D/trace* 2>/dev/null
  python3 bench/results/2026-11-28-h100/graph_trace.py $D/trace*_cuda_gpu_trace.csv 75 > $R/run170-decode-graph-trace.txt 2>&1
  head -20 $R/run170-decode-graph-trace.txt
fi
echo "nsys done $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 330 $C/grape_gpu_tests --gtest_color=no > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run170-gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run170-gpu-tests.log
grep -B2 -A12 "Failure" $R/run170-gpu-tests.log | head -40
