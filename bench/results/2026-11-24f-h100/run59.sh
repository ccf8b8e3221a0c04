#!/usr/bin/env bash
# GPU run 59: BERT b=1 forward (graph) with the tuner, without it, and with each attention split forced.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r59; D=/tmp/in; mkdir -p $R $D
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { echo "== $*" | cut -c1-150; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
A=(examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 300)
{
for r in 1 2; do
  echo "-- tuned"; gb "${A[@]}"
  echo "-- GRAPE_TUNE=0"; GRAPE_TUNE=0 gb "${A[@]}"
  echo "-- keys2"; GRAPE_TUNE_FORCE=keys2 gb "${A[@]}"
  echo "-- keys1"; GRAPE_TUNE_FORCE=keys1 gb "${A[@]}"
done
for f in keys2 keys1; do
  echo "-- profile $f"; GRAPE_TUNE_FORCE=$f $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --profile --warmup 5 --iters 20 2>&1 | grep -E "bert.grp:70" | head -3
done
cat $R/../r59/tuning 2>/dev/null
grep -h "" /tmp/gc/tuning/tuning.txt | grep -i keys | head
} > $R/bench.txt 2>&1
cat $R/bench.txt
tar czf $OUT/r59.tgz -C /tmp r59
