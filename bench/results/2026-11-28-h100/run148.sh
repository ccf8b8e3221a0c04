#!/usr/bin/env bash
# GPU run 148: the mono executor with a one-atomic grid barrier (top-bit flip) and GRAPE_MONO_TRACE
# (block 0's %globaltimer at every barrier): where decode_step's persistent kernel spends its time.
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
timeout 300 $C/grape_gpu_tests --gtest_filter='MonoExecutor.*' > $R/mono-tests.log 2>&1; echo "tests rc=$?"
grep -E "^\[  |Failure" $R/mono-tests.log | head -20
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
$B run "${DEC[@]}" --executor mono --output $D/om > /dev/null
python3 -c "
import numpy as np
a=np.load('$D/og/out0.npy').astype(np.float32); b=np.load('$D/om/out0.npy').astype(np.float32)
print('decode_step mono vs graph: max abs', float(np.abs(a-b).max()), 'argmax equal', (a.argmax(-1)==b.argmax(-1)).all())"
for round in 1 2; do
  for ex in graph mono; do
    $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step $ex round $round: /"
  done
done
GRAPE_MONO_TRACE=$R/trace-2sm.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 2>&1 | grep latency | sed "s/^/traced 2\/SM: /"
GRAPE_MONO_BLOCKS_PER_SM=1 GRAPE_MONO_TRACE=$R/trace-1sm.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 2>&1 | grep latency | sed "s/^/traced 1\/SM: /"
GRAPE_MONO_PREFETCH=0 GRAPE_MONO_TRACE=$R/trace-nopf.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 2>&1 | grep latency | sed "s/^/traced no prefetch: /"
tail -1 $R/trace-*.txt
sort -k2 -n -r $R/trace-2sm.txt | head -12
head -14 $R/trace-2sm.txt
