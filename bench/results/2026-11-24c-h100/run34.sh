#!/usr/bin/env bash
# GPU run 34 (head): pinned host memory for inputs (set_input, input_buffer) and outputs on the
# CUDA backend. The whole GPU suite; the batch GPU target (issue 9: grape batch over 100,000
# single-row MLP requests against grape bench on full batches) with the previous binary
# (grape_prev, run 33's) and the head, same run; decode_step wall times.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r34; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
bb() { timeout 240 python3 bench/batch/bench_batch.py --grape $1 --backend cuda --inputs npy-rows --outputs npy-rows --defines D=4096,H=16384,C=4096 --n 100000 --max-batch 256 --runs 0 --repeat 2 --threads $2 --json-out $R/batch-$(basename $1)-t$2.json > $R/batch-$(basename $1)-t$2.log 2>&1; echo "$1 threads $2 rc=$?"; python3 -c "
import json; d=json.load(open('$R/batch-$(basename $1)-t$2.json')); print({k: d[k] for k in ('processing_requests_per_s','bench_rows_per_s','bench_median_ms','batch_over_bench_throughput','startup_s') if k in d})"; }
bb $B/grape_prev 3
bb $B/grape 3
bb $B/grape 1
bb $B/grape_prev 1
echo "t $(( $(date +%s) - t0 )) s"
python3 bench/decode/make_inputs.py $D > /dev/null
for g in grape_prev grape grape_prev grape; do for ex in eager graph; do
  echo "== $g $ex"; $B/$g bench examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda --executor $ex --warmup 20 --iters 300 2>&1 | grep latency
done; done | tee $R/decode.txt
tar czf $OUT/r34.tgz -C /tmp r34
echo "total $(( $(date +%s) - t0 )) s"
