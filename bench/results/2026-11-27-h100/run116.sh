#!/usr/bin/env bash
# GPU run 116 (twentieth session): where the b=16 attention's time goes. bench_kernels --ncu over the
# three attention shapes (Grape and SDPA, same run); ncu --set full with SASS source counters on the
# BERT b=16 attention alone; SASS of its cubin; per-kernel ncu durations of one decode_step call.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=$OUT; mkdir -p $R/k
nvidia-smi -L
t0=$(date +%s)
python3 bench/kernels/bench_kernels.py $B/grape $R/k --only attention --ncu > $R/kernels-attention.txt 2>&1
tail -8 $R/kernels-attention.txt
echo "kernels $(( $(date +%s) - t0 )) s"
A=(bench $R/k/attention_bert_s128_b16.grp --backend cuda --input q=$R/k/attention_bert_s128_b16_q.npy --input k=$R/k/attention_bert_s128_b16_k.npy --input v=$R/k/attention_bert_s128_b16_v.npy --executor eager)
export GRAPE_CACHE_DIR=/tmp/gc116
$B/grape "${A[@]}" --warmup 2 --iters 20 | grep latency
timeout 200 ncu --set full --import-source no --launch-skip 3 --launch-count 1 -o $R/attn16 $B/grape "${A[@]}" --warmup 2 --iters 2 > $R/ncu-attn16.log 2>&1
ncu -i $R/attn16.ncu-rep --page source --csv --print-source sass > $R/attn16-sass.csv 2>&1
ncu -i $R/attn16.ncu-rep --page details > $R/attn16-details.txt 2>&1
grep -E "Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Block Limit|Theoretical Occ|Waves Per SM|Issue Slots Busy|No Eligible" $R/attn16-details.txt | head -20
for c in out/sass/*.cubin; do cuobjdump -sass $c > $R/$(basename $c .cubin).sass 2>&1; done; wc -l $R/*.sass
echo "attn $(( $(date +%s) - t0 )) s"
python3 - <<PY
import numpy as np
np.save('/tmp/tok.npy', np.array([464, 2068, 318, 257, 50256], np.int32)); np.save('/tmp/p.npy', np.array(128, np.int32))
PY
D=(examples/gpt2.grp --entry decode_step --random-weights 1 --input tok=/tmp/tok.npy --input p=/tmp/p.npy --backend cuda --executor eager)
n=$($B/grape bench "${D[@]}" --warmup 0 --iters 1 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kernels_per_call'])")
echo "decode kernels $n"
$B/grape bench "${D[@]}" --executor graph --warmup 20 --iters 300 | grep latency
timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none --launch-skip $((n*2)) --launch-count $n $B/grape bench "${D[@]}" --warmup 1 --iters 2 > $R/ncu-decode.csv 2>/dev/null
python3 bench/ncu_sum.py decode $R/ncu-decode.csv
python3 bench/ncu_kernels.py $R/ncu-decode.csv > $R/decode-kernels.txt 2>&1; head -12 $R/decode-kernels.txt
echo "total $(( $(date +%s) - t0 )) s"
