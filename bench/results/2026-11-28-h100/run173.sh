#!/usr/bin/env bash
# GPU run 173: the residual add before lm_head's fused layer norm materialised by the last c_proj's
# epilogue (lm_head stages A by 16-byte loads, scheduler/fusion.cpp norm_prologue) against
# grape-172 (the commit before, copies at GRAPE_COPY_UNROLL=1 = today's copy kernel): decode_step
# logits and beam_search tokens compared, graph times alternating, lm_head under ncu in both;
# then the whole GPU suite on the head.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_COPY_UNROLL=1
t0=$(date +%s)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
for g in grape-172 grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec-$g > /dev/null
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$g > /dev/null
done
python3 -c "
import numpy as np
a=np.load('$D/dec-grape-172/out0.npy'); b=np.load('$D/dec-grape/out0.npy'); print('decode logits identical:', (a==b).all(), 'max abs diff', np.abs(a.astype(np.float32)-b.astype(np.float32)).max())
for o in ('out0','out1'):
  a=np.load('$D/beam-grape-172/%s.npy'%o); b=np.load('$D/beam-grape/%s.npy'%o); print('beam', o, 'identical:', (a==b).all())"
for round in 1 2 3; do
  for g in grape-172 grape; do
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 500 2>&1 | grep -E "latency" | sed "s/^/decode $g round $round: /"
  done
done
for round in 1 2; do
  for g in grape-172 grape; do
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $g round $round: /"
  done
done
echo "benches $(( $(date +%s) - t0 )) s"
for g in grape-172 grape; do
  GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/kn-$g timeout 120 ncu --launch-skip 74 --launch-count 1 --section SpeedOfLight --section LaunchStats --section InstructionStats \
    $C/$g run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/ncu-$g > $D/ncu-$g.txt 2>&1
  grep -E "Duration|DRAM Through|Grid Size|Executed Instructions  " $D/ncu-$g.txt | sed "s/^/lm_head $g: /"
done
echo "ncu $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 330 $C/grape_gpu_tests --gtest_color=no > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run173-gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run173-gpu-tests.log
grep -B2 -A12 "Failure" $R/run173-gpu-tests.log | head -40
