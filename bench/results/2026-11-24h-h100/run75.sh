#!/usr/bin/env bash
# GPU run 75 (the head: weights prefetched one product ahead): per-kernel ncu lists of BERT b=1
# and b=16 (one eager call, kernels 0-18: embedding LN and layers 0-1) and GPT-2 decode_step, to
# see where the remaining time goes.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r75; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
for b in 1 16; do
  A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor eager)
  timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size,launch__block_size --csv --clock-control none --cache-control none \
    --launch-skip $((109*3)) --launch-count 109 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu-bert-b$b.csv 2>/dev/null
  echo "== bert b=$b"; python3 bench/ncu_sum.py bert-b$b $R/ncu-bert-b$b.csv | cut -c1-200; python3 bench/ncu_kernels.py $R/ncu-bert-b$b.csv 0 19
done
A=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda --executor eager)
timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
  --launch-skip $((88*3)) --launch-count 88 $B/grape bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu-decode.csv 2>/dev/null
echo "== decode"; python3 bench/ncu_sum.py decode $R/ncu-decode.csv | cut -c1-200; python3 bench/ncu_kernels.py $R/ncu-decode.csv 0 16
python3 bench/ncu_kernels.py $R/ncu-decode.csv 84 4
$B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --profile 2>&1 | head -40 > $R/profile-b1.txt
head -30 $R/profile-b1.txt
tar czf $OUT/r75.tgz -C /tmp r75
echo "total $(( $(date +%s) - t0 )) s"
