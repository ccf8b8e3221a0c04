#!/usr/bin/env bash
# GPU run 238 (thirty-seventh session): the record for scripts/probes/decode_two_stage.cu: its pacing
# sweep twice, Grape's graph decode_step and the previous probe (decode_megakernel, also checking
# its f538bfd refactor) in the same run, and ncu's kernel time for one paced launch (default ncu
# clock and cache control, then none).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=300,250,200 MK_LM_L2=4
timeout 60 $C/decode_two_stage 200 2>&1 | tee $R/ts8.txt
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
timeout 60 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --executor graph --entry decode_step \
  --input tok=$D/tok.npy --input p=$D/p.npy --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph: /" | tee -a $R/ts8.txt
timeout 40 $C/decode_megakernel 200 2>&1 | tee $R/mk14.txt | grep -E "check|producer warp: " | head -4
timeout 60 $C/decode_two_stage 200 2>&1 | grep "us per step" | sed "s/^/again: /" | tee -a $R/ts8.txt
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
MK_PACE=200 MK_PROFILE=1 timeout 90 $N --metrics gpu__time_duration.sum,dram__bytes_read.sum -k decode_two_stage --launch-skip 10 --launch-count 3 \
  $C/decode_two_stage 2>&1 | grep -E "check|duration|dram__bytes|==PROF==|rror" | tee $R/ts8-ncu.txt
MK_PACE=200 MK_PROFILE=1 timeout 90 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k decode_two_stage --launch-skip 10 --launch-count 3 \
  $C/decode_two_stage 2>&1 | grep -E "duration|rror" | sed "s/^/no clock or cache control: /" | tee -a $R/ts8-ncu.txt
