#!/usr/bin/env bash
# GPU run 129: the block-per-row normalisations reading U = 8 elements per thread at a time
# (grape-ls: the stats pass's loads issued together, the maximum moved once per group; the output
# pass's loads before its stores) against the head (grape). Their parity tests first; then
# bench/rows (GPT-2 vocabulary rows: log_softmax + the beam's score, 5 rows; argmax, unchanged, as a
# control) and beam_search, alternating, two rounds; Nsight Compute on the log_softmax kernel.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests-ls --gtest_color=no --gtest_filter='GpuParity.LongRowSoftmax:GpuParity.RowNormsOfFewAndManyRows:GpuParity.EveryOp:GpuParity.Gpt2*:GpuParity.Bert' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -30
python3 -c "
import numpy as np; r=np.random.default_rng(5)
np.save('$D/ls_x.npy', (3*r.standard_normal((5, 50257))).astype(np.float16)); np.save('$D/ls_s.npy', r.standard_normal(5).astype(np.float32))
np.save('$D/am_x.npy', r.standard_normal((5, 50257)).astype(np.float32))"
LS=(bench/rows/log_softmax.grp --input x=$D/ls_x.npy --input s=$D/ls_s.npy --backend cuda)
AM=(bench/rows/argmax.grp --input x=$D/am_x.npy --backend cuda)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
for bin in grape grape-ls; do $B/$bin run "${LS[@]}" --output /tmp/ls-$bin > /dev/null; done
python3 -c "
import numpy as np
x=np.load('$D/ls_x.npy').astype(np.float64); s=np.load('$D/ls_s.npy').astype(np.float64)
m=x.max(1, keepdims=True); ref=(x-m)-np.log(np.exp(x-m).sum(1, keepdims=True))+s[:,None]
for b in ('grape','grape-ls'):
  o=np.load('/tmp/ls-%s/out0.npy'%b); print(b, 'log_softmax vs float64: max abs', float(abs(o-ref).max()))"
b() { echo -n "$1: "; shift; env "$@" | grep -E "latency" | tr '\n' ' '; echo; }
for r in 1 2; do
  for bin in grape grape-ls; do
    b "r$r $bin log_softmax 5x50257 graph" $B/$bin bench "${LS[@]}" --executor graph --warmup 50 --iters 500
    b "r$r $bin argmax 5x50257 graph" $B/$bin bench "${AM[@]}" --executor graph --warmup 50 --iters 500
  done
  for bin in grape grape-ls; do b "r$r $bin beam graph" $B/$bin bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6; done
done
for bin in grape grape-ls; do
  ncu --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy -c 1 \
    $B/$bin run "${LS[@]}" --output /tmp/ls-ncu > $R/run129-ncu-$bin.txt 2>&1
  echo "$bin: $(grep -E 'Duration|DRAM Throughput|Memory Throughput' $R/run129-ncu-$bin.txt | tr -s ' ' | tr '\n' ';')"
done
echo "total $(( $(date +%s) - t0 )) s"
