#!/usr/bin/env bash
# GPU run 246 (thirty-seventh session): the record for scripts/probes/decode_two_stage.cu at the
# session's end: the best configuration (MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1) twice, Grape's graph
# decode_step in the same run, ncu's kernel time (default clock and cache control, then none), and
# compute-sanitizer memcheck over the probe's checked launches.
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1
timeout 40 $C/decode_two_stage 200 2>&1 | tee $R/ts16.txt
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
timeout 60 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --executor graph --entry decode_step \
  --input tok=$D/tok.npy --input p=$D/p.npy --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step graph: /" | tee -a $R/ts16.txt
timeout 40 $C/decode_two_stage 200 2>&1 | grep "us per step" | sed "s/^/again: /" | tee -a $R/ts16.txt
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
MK_PROFILE=1 timeout 90 $N --metrics gpu__time_duration.sum,dram__bytes_read.sum -k decode_two_stage --launch-skip 10 --launch-count 3 \
  $C/decode_two_stage 2>&1 | grep -E "check \(prof|duration|dram__bytes|rror" | tee $R/ts16-ncu.txt
MK_PROFILE=1 timeout 90 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k decode_two_stage --launch-skip 10 --launch-count 3 \
  $C/decode_two_stage 2>&1 | grep -E "duration|rror" | sed "s/^/no clock or cache control: /" | tee -a $R/ts16-ncu.txt
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
MK_PROFILE=1 timeout 150 $S --tool memcheck $C/decode_two_stage > $R/ts16-memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "check|ERROR SUMMARY" $R/ts16-memcheck.txt | tail -12
