#!/usr/bin/env bash
# GPU run 165: bench/beam_logic's top-k at 8192 (the default), 4096, 2048, 1024 and 512 elements
# per block (GRAPE_TOPK_PER_BLOCK; splits capped at kTopKMaxSplits = 128), results checked against
# the CPU, event-timed kernels and graph latency; the default's top-k under ncu with per-instruction
# SASS samples.
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
for e in 8192 4096 2048 1024 512; do
  export GRAPE_TOPK_PER_BLOCK=$e
  $C/grape run $G "${IN[@]}" --backend cuda --executor eager --output $D/gpu$e > /dev/null
  python3 -c "
import numpy as np
ok = all((np.load('$D/cpu/out%d.npy'%k) == np.load('$D/gpu$e/out%d.npy'%k)).all() for k in (0, 1))
print('per block $e: cuda == cpu', ok)"
  $C/grape bench $G --entry main "${IN[@]}" --backend cuda --executor graph --warmup 50 --iters 2000 2>&1 | grep latency | sed "s/^/per block $e graph: /"
  $C/grape bench $G --entry main "${IN[@]}" --backend cuda --executor eager --warmup 20 --iters 300 --profile 2>&1 | grep -E "_topk|_log_softmax" | sed "s/^/per block $e: /"
done
unset GRAPE_TOPK_PER_BLOCK
GRAPE_TUNE=0 ncu --launch-skip 1 --launch-count 1 --set full --import-source no -o $D/topk \
  $C/grape run $G "${IN[@]}" --backend cuda --executor eager --output $D/ncu > /dev/null 2>&1
ncu -i $D/topk.ncu-rep --page source --csv --print-source sass > $R/topk-sass.csv 2>&1
ncu -i $D/topk.ncu-rep --page details --print-details all > $R/topk-details.txt 2>&1
grep -E "Duration|Stall|Warp Cycles Per Issued" $R/topk-details.txt | head -30
