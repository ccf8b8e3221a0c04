#!/usr/bin/env bash
# GPU run 152: is a step slower inside a long persistent kernel than alone? bench/decode/gemv.grp:
# c_fc alone (eager, graph, mono) and `mlp` (8 layers, 16 products) under graph and mono, with a
# trace; ncu warp-state and memory sections of decode_step's and mlp's persistent kernels.
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
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/x768.npy', (0.5*r.standard_normal((5,768))).astype(np.float16))"
G=(bench/decode/gemv.grp --random-weights 3 --input x=$D/x768.npy --backend cuda)
$B run "${G[@]}" --entry mlp --executor graph --output $D/mg >/dev/null
$B run "${G[@]}" --entry mlp --executor mono --output $D/mm >/dev/null
python3 -c "import numpy as np; print('mlp mono identical to graph:', (np.load('$D/mg/out0.npy')==np.load('$D/mm/out0.npy')).all())"
for round in 1 2; do
  for ex in eager graph mono; do
    $B bench "${G[@]}" --entry c_fc --executor $ex --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/c_fc $ex round $round: /"
  done
  for ex in graph mono; do
    $B bench "${G[@]}" --entry mlp --executor $ex --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/mlp $ex round $round: /"
  done
done
GRAPE_MONO_TRACE=$R/trace-mlp.txt $B bench "${G[@]}" --entry mlp --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
cat $R/trace-mlp.txt
$B bench "${G[@]}" --entry mlp --executor eager --warmup 5 --iters 50 --profile 2>&1 | head -14
SECT="--section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section SpeedOfLight --section Occupancy"
ncu $SECT -k grape_persistent -c 1 $B run "${G[@]}" --entry mlp --executor mono --output $D/o1 > $R/ncu-mlp-mono.txt 2>&1
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
ncu $SECT -k grape_persistent -c 1 $B run "${DEC[@]}" --executor mono --output $D/o2 > $R/ncu-decode-mono.txt 2>&1
grep -E "Duration|DRAM Throughput|Warp Cycles Per Issued|Achieved Occupancy|L2 Hit|Mem Busy" $R/ncu-mlp-mono.txt $R/ncu-decode-mono.txt
