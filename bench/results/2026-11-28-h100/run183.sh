#!/usr/bin/env bash
# GPU run 183 (the head): the sequences' copy and staging helpers with the block size as a constant,
# against run 182's binary (grape-old); then the GPU tests that run block sequences (control-flow
# cases on every executor, every op, GPT-2, the sequence and executor tests).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
export GRAPE_TUNE=0
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$g > /dev/null
done
python3 -c "
import numpy as np
for o in ('out0', 'out1'):
  a = np.load('$D/beam-grape-old/%s.npy' % o); b = np.load('$D/beam-grape/%s.npy' % o); print('beam', o, 'identical:', (a == b).all())"
for round in 1 2; do
  for g in grape-old grape; do
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep -E "latency" | sed "s/^/beam_search $g round $round: /"
  done
done
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | grep -m1 "block sequence" | sed "s/^/eager profile $g: /"
done
unset GRAPE_TUNE
echo "benches $(( $(date +%s) - t0 )) s"
F='BlockSequences.*:GpuParity.ControlFlowCases:AutoExecutor.ControlFlowCases:GpuParity.EveryOp:GpuParity.Gpt2*:Executors/*:MonoExecutor.*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 170 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run183-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run183-gpu-tests.log
grep -B2 -A12 "Failure" $R/run183-gpu-tests.log | head -30
