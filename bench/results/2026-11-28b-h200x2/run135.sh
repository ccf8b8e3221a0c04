#!/usr/bin/env bash
# GPU run 135 (nvidia-h200-x2): issue 9's last target, `grape batch --devices all` against one GPU
# on the same request file (100,000 single-row requests, MLP 4096->16384->4096 fp16, outputs on
# tmpfs). Also, first thing on this fresh machine: a cold build of gpt2.grp (32 cores), then the
# same with CUDA_CACHE_PATH pointing at an empty folder (does NVRTC's own cache honour it?).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=$PWD/build-carry
R=$OUT
nvidia-smi -L; nproc; df -h /dev/shm /tmp | cat; du -sh ~/.nv 2>/dev/null
echo "== cold build, fresh machine"; time ($B/grape compile examples/gpt2.grp --arch sm_90 | tail -1)
du -sh ~/.nv 2>/dev/null
echo "== again with CUDA_CACHE_PATH empty"; time (CUDA_CACHE_PATH=/tmp/ccp-empty $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1)
du -sh ~/.nv /tmp/ccp-empty 2>/dev/null
echo "== again, warm"; time ($B/grape compile examples/gpt2.grp --arch sm_90 | tail -1)
export GRAPE_CACHE_DIR=/tmp/grape-cache
BB="python3 bench/batch/bench_batch.py --grape $B/grape --backend cuda --inputs npy-rows --outputs npy-rows --n 100000 --max-batch 256 --runs 0 --out-root /dev/shm"
MLP="--defines D=4096,H=16384,C=4096"
# warm the kernel cache once
$BB $MLP --repeat 1 --threads 1 --devices 0 > /dev/null 2>&1
for cfg in "0 3" "all 3" "0 2" "all 2" "all 4" "0 3" "all 3"; do
  set -- $cfg
  echo "== MLP devices=$1 threads=$2"
  $BB $MLP --repeat 3 --devices $1 --threads $2 --json-out $R/mlp-dev$1-t$2-$RANDOM.json | python3 -c 'import json,sys; r=json.load(sys.stdin); print({k:r[k] for k in ["processing_requests_per_s","batch_processing_rates","bench_rows_per_s","batch_over_bench_throughput","identical_to_stacked","startup_s","output_mb_per_s"]})'
done
for d in 0 all; do
  echo "== rows (no compute) devices=$d threads=3"
  $BB --model rows --repeat 3 --devices $d --threads 3 | python3 -c 'import json,sys; r=json.load(sys.stdin); print({k:r[k] for k in ["processing_requests_per_s","batch_processing_rates","identical_to_stacked"]})'
done
nvidia-smi --query-gpu=name,memory.used --format=csv
