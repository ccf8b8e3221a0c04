#!/usr/bin/env bash
# GPU run 159: the RowVariants GPU test (run 158's program had a syntax error), lm_head's two tuning
# candidates (tc16, tc16-split2) forced in turn on decode_step, and bench/beam with its peer.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='RowVariants.*:Autotune*:MonoExecutor.MlpWithChangingRows' \
  > $R/tests.log 2>&1
echo "tests rc $?"; grep -E "^\[ *(OK|FAILED|PASSED)|Failure|error" $R/tests.log | head -20
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
for f in tc16 tc16-split2; do
  GRAPE_TUNE_FORCE=$f $B run examples/gpt2.grp "${ARGS[@]}" --executor graph --output $D/$f > /dev/null
done
python3 -c "
import numpy as np
a=np.load('$D/tc16/out0.npy').astype(np.float32); b=np.load('$D/tc16-split2/out0.npy').astype(np.float32)
print('lm_head split2 vs tc16: max abs', float(np.abs(a-b).max()), 'argmax equal', (a.argmax(-1)==b.argmax(-1)).all())"
for round in 1 2; do
  for f in tc16 tc16-split2; do
    GRAPE_TUNE_FORCE=$f $B bench examples/gpt2.grp "${ARGS[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s|^|decode_step $f round $round: |"
  done
done
$B bench examples/gpt2.grp "${ARGS[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep -E "latency|autotuning" | sed "s|^|decode_step tuned: |"
GRAPE_TUNE=0 $B bench examples/gpt2.grp "${ARGS[@]}" --executor graph --warmup 5 --iters 20 --profile 2>&1 | head -30
timeout 280 python3 bench/beam/bench_beam.py --grape $B --out $R/beam 2>&1 | tail -14
