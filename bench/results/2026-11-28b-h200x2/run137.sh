#!/usr/bin/env bash
# GPU run 137 (two GPUs): issue 9's two-GPU target after the warm-up call per session and the
# cheaper duplicate-id check (ab5f18b). 100,000 and 300,000 single-row requests to the MLP
# 4096->16384->4096 fp16, outputs on tmpfs, one GPU against both, 3 sessions per GPU; and both
# GPUs without the warm-up.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/grape-cache
B=$PWD/build-carry
R=$OUT
nvidia-smi -L
BB="python3 bench/batch/bench_batch.py --grape $B/grape --backend cuda --inputs npy-rows --outputs npy-rows --max-batch 256 --runs 0 --out-root /dev/shm --defines D=4096,H=16384,C=4096"
$BB --n 1000 --repeat 1 --threads 1 --devices 0 > /dev/null 2>&1   # the kernel cache
show='import json,sys; r=json.load(sys.stdin); s=r["batch_summary"]; print({k:r[k] for k in ["processing_requests_per_s","batch_processing_rates","bench_rows_per_s","identical_to_stacked","startup_s"]}, s["seconds"], s["warmup_seconds"], s["batch_p50_ms"], s["batch_p99_ms"])'
for cfg in "100000 0" "100000 all" "300000 0" "300000 all" "100000 0" "100000 all"; do
  set -- $cfg; n=$1
  for d in $2; do
    echo "== n=$n devices=$d threads=3"
    GRAPE_BATCH_TRACE=$R/trace-n$n-dev$d.csv $BB --n $n --repeat 3 --devices $d --threads 3 --json-out $R/n$n-dev$d-$RANDOM.json | python3 -c "$show"
  done
done
echo "== n=100000 devices=all threads=3 --no-warmup"
$BB --n 100000 --repeat 3 --devices all --threads 3 --batch-args=--no-warmup | python3 -c "$show"
