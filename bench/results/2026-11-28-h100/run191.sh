#!/usr/bin/env bash
# GPU run 191: block sequences releasing their successor as they start (GRAPE_SEQUENCE_PDL_EARLY=1,
# the default) against release at exit (=0), same binary, separate kernel caches, GRAPE_TUNE=0:
# outputs compared, beam_search / generate graph times alternating (3 rounds); the sequence,
# control-flow and graph-executor GPU tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
for m in 0 1; do
  for e in DEC BEAM GEN; do
    eval "A=(\"\${$e[@]}\")"
    GRAPE_SEQUENCE_PDL_EARLY=$m GRAPE_CACHE_DIR=$D/k$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${A[@]}" --executor graph --output $D/$e-$m > /dev/null
  done
done
python3 -c "
import numpy as np
for e in ('DEC', 'BEAM', 'GEN'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-0/%s.npy' % (e, o))
    except Exception: continue
    b = np.load('$D/%s-1/%s.npy' % (e, o)); print(e, o, 'identical:', a.shape == b.shape and (a == b).all())"
for round in 1 2 3; do
  for m in 0 1; do
    GRAPE_SEQUENCE_PDL_EARLY=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search early=$m round $round: /"
    GRAPE_SEQUENCE_PDL_EARLY=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate early=$m round $round: /"
  done
done
unset GRAPE_TUNE
echo "benches $(( $(date +%s) - t0 )) s"
F='BlockSequences.*:GpuParity.ControlFlowCases:GraphExecutor.*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run191-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run191-gpu-tests.log
grep -B2 -A10 "Failure" $R/run191-gpu-tests.log | head -30
gzip -f $R/run191-gpu-tests.log
echo "total $(( $(date +%s) - t0 )) s"
