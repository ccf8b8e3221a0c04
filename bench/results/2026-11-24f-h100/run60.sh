#!/usr/bin/env bash
# GPU run 60: the BERT b=1 attention kernel (k4, mask from the input) under Nsight Compute, keys2 and keys1.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r60; D=/tmp/in; mkdir -p $R $D
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
for f in keys2 keys1; do
  GRAPE_TUNE_FORCE=$f ncu --set full --import-source no --kernel-name regex:grape --launch-skip 222 --launch-count 1 -o $R/a$f $B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --warmup 1 --iters 2 > $R/ncu$f.log 2>&1
  ncu --import $R/a$f.ncu-rep --page details > $R/details$f.txt 2>&1
  ncu --import $R/a$f.ncu-rep --page source --csv --print-source sass > $R/sass$f.csv 2>&1
  echo "== $f"; grep -E "Grid Size|Block Size|Duration|Registers Per|Executed Ipc A|Warp Cycles Per Issued|Executed Instructions  |Local Memory|L1/TEX Hit|Mem Busy" $R/details$f.txt | head -14
done
rm -f $R/*.ncu-rep
tar czf $OUT/r60.tgz -C /tmp r60
