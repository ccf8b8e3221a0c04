#!/usr/bin/env bash
# GPU run 41 (head: 16-byte copy kernels, the faster grape batch host side): the whole GPU suite;
# issue 9's GPU target (grape batch, 100,000 single-row MLP requests, against grape bench on full
# batches) with outputs on tmpfs and on the disk, and the disk's fsynced write rate; the rest of
# the compute-sanitizer sweep (racecheck and initcheck on the graph executor).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r41; mkdir -p $R
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -30
grep -E "DataMovement" $R/gpu-tests.log
mkdir -p /tmp/ddt && dd if=/dev/zero of=/tmp/ddt/t bs=64M count=16 conv=fsync 2>&1 | tail -1; rm -rf /tmp/ddt
df -h /tmp /dev/shm | tail -2
bb() { local tag=$1; shift; timeout 200 python3 bench/batch/bench_batch.py --grape $B/grape --backend cuda --inputs npy-rows --outputs npy-rows --defines D=4096,H=16384,C=4096 --n 100000 --max-batch 256 --runs 0 --repeat 2 --json-out $R/batch-$tag.json "$@" > $R/batch-$tag.log 2>&1; echo "batch $tag rc=$? $(( $(date +%s) - t0 )) s"; python3 -c "
import json; d=json.load(open('$R/batch-$tag.json')); print({k: d[k] for k in d if any(s in k for s in ('per_s','bench','ratio','over','identical','startup','mb'))})"; }
bb shm-t1 --threads 1 --out-root /dev/shm
bb shm-t3 --threads 3 --out-root /dev/shm
bb disk-t3 --threads 3
tar czf $OUT/r41.tgz -C /tmp r41
left=$(( 560 - ($(date +%s) - t0) ))
echo "sanitize budget $left s"
OUT=$R GRAPE_SANITIZE_EXECUTORS=graph timeout $left scripts/gpu-check.sh sanitize racecheck initcheck > $R/sanitize.log 2>&1
echo "sanitize rc=$? $(( $(date +%s) - t0 )) s"; tail -5 $R/sanitize.log
tar czf $OUT/r41.tgz -C /tmp r41
echo "total $(( $(date +%s) - t0 )) s"
