#!/usr/bin/env bash
# GPU run 117: attention_mma.cuh with output rows through shared memory (16-byte stores), both
# first key tiles requested up front, exp as one FMA + ex2 and four partial sums. Binaries:
# grape-base (dd4a18d), grape-noexp (rows + prefetch only), grape (all). bench_kernels --ncu on the
# attention shapes and BERT b=1/b=16 (graph) for each, two rounds; ncu source profiles of the new
# b=16 attention and of a decode GEMV (c_fc); then the whole GPU suite beside memcheck/racecheck
# over the attention tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
for g in grape-base grape-noexp grape; do
  python3 bench/kernels/bench_kernels.py $B/$g $R/k-$g --only attention --ncu > $R/kernels-$g.txt 2>&1
  echo "== $g"; grep -E "^attention" $R/kernels-$g.txt | awk '{print $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13}'
done
echo "kernels $(( $(date +%s) - t0 )) s"
python3 bench/bert/make_inputs.py $D > /dev/null
for r in 1 2; do
  for g in grape-base grape-noexp grape; do
    for b in 1 16; do
      echo -n "r$r $g b=$b: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench examples/bert.grp --entry forward --weights $D/bert.safetensors --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --backend cuda --executor graph --warmup 10 --iters 200 2>&1 | grep -E "latency|rror" | head -1
    done
  done
done
echo "bert $(( $(date +%s) - t0 )) s"
A=(bench $R/k-grape/attention_bert_s128_b16.grp --backend cuda --input q=$R/k-grape/attention_bert_s128_b16_q.npy --input k=$R/k-grape/attention_bert_s128_b16_k.npy --input v=$R/k-grape/attention_bert_s128_b16_v.npy --executor eager)
export GRAPE_CACHE_DIR=/tmp/gc117
timeout 120 ncu --set full --import-source no --launch-skip 3 --launch-count 1 -o $R/attn16 $B/grape "${A[@]}" --warmup 2 --iters 2 > $R/ncu-attn16.log 2>&1
ncu -i $R/attn16.ncu-rep --page source --csv --print-source sass > $R/attn16-sass.csv 2>&1
ncu -i $R/attn16.ncu-rep --page details > $R/attn16-details.txt 2>&1
grep -E "Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Theoretical Occ|Waves Per SM|Issue Slots Busy" $R/attn16-details.txt | head -10
for c in out/sass/*.cubin; do cuobjdump -sass $c > $R/$(basename $c .cubin).sass 2>&1; done
python3 -c "import numpy as np; np.save('/tmp/tok.npy', np.array([464, 2068, 318, 257, 50256], np.int32)); np.save('/tmp/p.npy', np.array(128, np.int32))"
DEC=(examples/gpt2.grp --entry decode_step --random-weights 1 --input tok=/tmp/tok.npy --input p=/tmp/p.npy --backend cuda --executor eager)
for g in grape-base grape; do echo -n "decode graph $g: "; GRAPE_CACHE_DIR=/tmp/gc-$g $B/$g bench "${DEC[@]}" --executor graph --warmup 20 --iters 300 | grep latency; done
timeout 120 ncu --set full --import-source no --launch-skip $((87 + 7)) --launch-count 1 -o $R/cfc $B/grape bench "${DEC[@]}" --warmup 1 --iters 1 > $R/ncu-cfc.log 2>&1
ncu -i $R/cfc.ncu-rep --page source --csv --print-source sass > $R/cfc-sass.csv 2>&1
ncu -i $R/cfc.ncu-rep --page details > $R/cfc-details.txt 2>&1
grep -E "Grid Size|Duration|Registers Per|Achieved Occupancy|Executed Instructions  |Memory Throughput|DRAM Throughput" $R/cfc-details.txt | head -10
echo "ncu $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 280 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
F='Shapes/GpuAttention.*:GpuParity.AttentionStoredThroughTheMergeOfHeads'
(for tool in memcheck racecheck; do GRAPE_CACHE_DIR=/tmp/gcs timeout 250 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > $R/san-$tool.log 2>&1; done) &
wait
cat $R/gt*.log > $R/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log; grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
for tool in memcheck racecheck; do echo "$tool: $(grep -E '^\[  (PASSED|FAILED) ' $R/san-$tool.log | tr '\n' ' ') $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san-$tool.log)"; done
echo "total $(( $(date +%s) - t0 )) s"
