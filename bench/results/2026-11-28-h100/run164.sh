#!/usr/bin/env bash
# GPU run 164: where beam search's candidate selection goes (bench/beam_logic: log_softmax of 5 x
# 50257 logits plus the beams' scores, top 10 of 251285), Grape against PyTorch in the same run:
# per-kernel event times, graph latency, ncu sections of both kernels; and the lm_head (decode,
# launch 86) under ncu's memory and warp-state sections.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_CACHE_DIR=$D/kc GRAPE_COMPILE_WORKER=$C/grape
python3 -c "
import numpy as np
np.save('$D/logits.npy', (np.random.RandomState(0).randn(5,50257)*3).astype(np.float16))
np.save('$D/scores.npy', np.array([0,-1.5,-2,-3,-4],dtype=np.float32))"
G=bench/beam_logic/beam_logic.grp
IN=(--input logits=$D/logits.npy --input scores=$D/scores.npy)
$C/grape run $G "${IN[@]}" --backend cpu --output $D/cpu > /dev/null
$C/grape run $G "${IN[@]}" --backend cuda --executor eager --output $D/gpu > /dev/null
python3 -c "
import numpy as np
for k in (0, 1):
  a=np.load('$D/cpu/out%d.npy'%k); b=np.load('$D/gpu/out%d.npy'%k); print('out%d cuda == cpu:'%k, (a==b).all() if k else float(np.abs(a-b).max()))"
$C/grape bench $G --entry main "${IN[@]}" --backend cuda --executor graph --warmup 50 --iters 2000 2>&1 | grep latency | sed 's/^/grape graph: /'
$C/grape bench $G --entry main "${IN[@]}" --backend cuda --executor eager --warmup 20 --iters 200 --profile 2>&1 | tail -6
python3 bench/beam_logic/peer.py $D/logits.npy $D/scores.npy
GRAPE_TUNE=0 ncu --launch-count 2 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
  $C/grape run $G "${IN[@]}" --backend cuda --executor eager --output $D/ncu > $R/ncu-beam-logic.txt 2>&1
grep -E "Duration|DRAM Through|Memory Through|Registers|Grid Size|Block Size|Achieved Occ|Warp Cycles Per Issued|Stall" $R/ncu-beam-logic.txt | head -40
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
GRAPE_TUNE=0 ncu --launch-skip 86 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section SourceCounters \
  $C/grape run examples/gpt2.grp "${ARGS[@]}" --executor eager --output $D/ncu-lm > $R/ncu-lm-head.txt 2>&1
grep -E "Duration|DRAM Through|Memory Through|L2 Hit|Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps" $R/ncu-lm-head.txt | head -20
