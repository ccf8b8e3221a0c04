#!/usr/bin/env bash
# GPU run 182: block-sequence bodies with constant blockIdx.x / gridDim.x / blockDim.x (grid-stride
# loops of constant stride) against the commit before (grape-old, its own kernel cache, both
# GRAPE_TUNE=0): outputs compared, beam_search and generate graph times alternating, the scan's
# line in the eager profile; the sequence and control-flow GPU tests; bench/beam with its peer.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$g > /dev/null
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --output $D/gen-$g > /dev/null
done
python3 -c "
import numpy as np
for e in ('beam', 'gen'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-grape-old/%s.npy' % (e, o))
    except Exception: continue
    b = np.load('$D/%s-grape/%s.npy' % (e, o)); print(e, o, 'identical to the commit before:', a.shape == b.shape and (a == b).all())"
for round in 1 2; do
  for g in grape-old grape; do
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | sed "s/^/beam_search $g round $round: /"
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | sed "s/^/generate $g round $round: /"
  done
done
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile > $R/run182-profile-$g.txt 2>&1
  grep -m3 "block sequence" $R/run182-profile-$g.txt | sed "s/^/eager profile $g: /"
done
unset GRAPE_TUNE
echo "benches $(( $(date +%s) - t0 )) s"
F='BlockSequences.*:GpuParity.ControlFlowCases:AutoExecutor.ControlFlowCases:GpuParity.Gpt2*:GraphExecutor.*:Executors/*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 150 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run182-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run182-gpu-tests.log
timeout 120 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam 2>&1 | tail -8 | head -4
cp $R/beam/beam_results.md $R/run182-beam_results.md 2>/dev/null; rm -rf $R/beam
echo "total $(( $(date +%s) - t0 )) s"
