#!/usr/bin/env bash
# GPU run 104 (row norms split over a block's warps when the rows are few) against
# build-carry/grape-k4 (the keys4 attention, run 103): the whole GPU suite; memcheck + racecheck
# over the new row-norm test; BERT b=1 / b=16, decode_step and the overhead chain (graph),
# alternating, two rounds; ncu durations of BERT b=1 layer 0 for both; bench_kernels --ncu on the
# attention shapes (Grape beside scaled_dot_product_attention, same run).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=/tmp/r104; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gc104-$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
for tool in memcheck racecheck; do
  GRAPE_CACHE_DIR=/tmp/gc104-0 timeout 150 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter='GpuParity.RowNormsSplitOverWarps' --gtest_color=no > $R/san-$tool.log 2>&1
  echo "$tool: $(grep -E '^\[  (PASSED|FAILED) ' $R/san-$tool.log | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log)"
done
python3 bench/bert/make_inputs.py $D > /dev/null
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
gb() { local g=$1; shift; echo "== $g $*" | cut -c1-60; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
for r in 1 2; do for g in grape-k4 grape; do
  for b in 1 16; do
    gb $g examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
  gb $g examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  gb $g bench/overhead/overhead.grp --input x=$D/x_overhead.npy --executor graph --warmup 20 --iters 500
done; done
for g in grape-k4 grape; do
  A=(examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager)
  GRAPE_CACHE_DIR=/tmp/gc-$g timeout 100 ncu --metrics gpu__time_duration.sum,launch__grid_size --csv --clock-control none --cache-control none \
    --launch-skip $((85*3)) --launch-count 85 $B/$g bench "${A[@]}" --warmup 2 --iters 2 > $R/ncu.csv 2>/dev/null
  echo "== ncu b=1 $g"; python3 bench/ncu_sum.py bert-b1 $R/ncu.csv | cut -c1-80; python3 bench/ncu_kernels.py $R/ncu.csv 0 8
done
python3 bench/kernels/bench_kernels.py $B/grape $R/k --only "attention" --ncu > $R/kernels-attn.txt 2>&1
cp $R/kernels-attn.txt $OUT/run104-kernels-attention.txt; tail -12 $R/kernels-attn.txt
echo "total $(( $(date +%s) - t0 )) s"
