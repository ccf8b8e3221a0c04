#!/usr/bin/env bash
# GPU run 147 (one H100/H200): the mono executor after run 146 (parameter blocks staged in shared
# memory, __launch_bounds__(256, 2), each launch prefetching the next matrix product's weight into
# L2). (1) its GPU tests; (2) decode_step at its real size: mono's logits against graph's, then
# graph, mono, mono without prefetch, mono at 1 block/SM, alternating; (3) ncu of the persistent kernel.
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
grep -E "^\[  |mono:|Failure|error" $R/mono-tests.log | head -40
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
mkdir -p $D/dump
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
GRAPE_DUMP_KERNELS=$D/dump timeout 200 $B run "${DEC[@]}" --executor mono --output $D/om 2>&1 | tail -3
echo "persistent kernel: $(grep -c '::grape_entry(' $D/dump/decode_step_persistent0.cu) launches, $(grep -c '^  grape_grid_barrier' $D/dump/decode_step_persistent0.cu) barriers, $(grep -c 'void grape_entry' $D/dump/decode_step_persistent0.cu) distinct bodies"
cp $D/dump/decode_step_persistent0.cu $R/ 2>/dev/null
python3 -c "
import numpy as np
a=np.load('$D/og/out0.npy').astype(np.float32); b=np.load('$D/om/out0.npy').astype(np.float32)
print('decode_step mono vs graph: max abs', float(np.abs(a-b).max()), 'rel L2', float(np.linalg.norm(a-b)/np.linalg.norm(a)), 'argmax equal', (a.argmax(-1)==b.argmax(-1)).all())"
for round in 1 2; do
  for v in graph mono mono-nopf mono-1sm; do
    case $v in
      graph) env=(); ex=graph;;
      mono) env=(); ex=mono;;
      mono-nopf) env=(GRAPE_MONO_PREFETCH=0); ex=mono;;
      mono-1sm) env=(GRAPE_MONO_BLOCKS_PER_SM=1); ex=mono;;
    esac
    env "${env[@]}" $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step $v round $round: /"
  done
done
ncu --metrics gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,dram__bytes.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed -k grape_persistent -c 1 $B run "${DEC[@]}" --executor mono --output $D/om2 2>&1 | grep -E "duration|grid_size|registers|dram" | head
GRAPE_MONO_PREFETCH=0 ncu --metrics gpu__time_duration.sum -k grape_persistent -c 1 $B run "${DEC[@]}" --executor mono --output $D/om2 2>&1 | grep -E "duration" | sed "s/^/no prefetch: /"
