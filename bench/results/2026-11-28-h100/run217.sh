#!/usr/bin/env bash
# GPU run 217 (thirty-fourth session): where a decode GEMV spends the 1.4-2 us between its wait and
# its rows' statistics (runs 214-216: even with no weight loads in flight, NO_PRELOAD). Nsight
# Compute on one launch each of qkv (k2), attention (k3), c_fc (k5), mlp c_proj (k6) of layer 0,
# eager, caches flushed (the default) as in the graph where weights and code come from DRAM:
# warp-state stall reasons, memory workload, and c_fc's SASS with its stall samples.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy --executor eager)
export GRAPE_CACHE_DIR=$D/k
$C/grape run examples/gpt2.grp "${ARGS[@]}" --output $D/o > /dev/null 2>&1
S="--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy --section SourceCounters"
timeout 200 ncu $S --kernel-name grape_kernel --launch-skip 2 --launch-count 5 -o $D/rep $C/grape run examples/gpt2.grp "${ARGS[@]}" --output $D/o > $R/run217-ncu.log 2>&1
echo "ncu rc $? $(( $(date +%s) - t0 )) s"
ncu --import $D/rep.ncu-rep --page details > $R/run217-details.txt 2>&1
ncu --import $D/rep.ncu-rep --page raw --csv --metrics regex:smsp__average_warp_latency_issue_stalled.*,regex:smsp__pcsamp_warps_issue_stalled_.*,gpu__time_duration.sum > $R/run217-stalls.csv 2>&1
ncu --import $D/rep.ncu-rep --page source --print-source sass --csv > $R/run217-k5-sass.csv 2>&1
ls -la $R; grep -E "Duration|Stall|stall|No Instruction|Long Scoreboard" $R/run217-details.txt | head -60
echo "total $(( $(date +%s) - t0 )) s"
