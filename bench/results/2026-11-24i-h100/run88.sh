#!/usr/bin/env bash
# GPU run 88: persistent candidates (wgmma128-p, wgmma96-p) for products of more than a wave of
# tiles. Autotune and sibling tests; BERT b=1 / b=16 and decode_step (graph), siblings off / on,
# two rounds; the b=16 eager profile's largest kernels.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc88
B=build-carry; R=/tmp/r88; D=/tmp/in; mkdir -p $R $D $OUT
t0=$(date +%s)
timeout 200 $B/grape_gpu_tests --gtest_filter='Autotune.*:GpuParity.Sibling*' --gtest_color=no > $R/t.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^\[       OK" $R/t.log; grep -B2 -A10 Failure $R/t.log | head -30
echo "tests $(( $(date +%s) - t0 )) s"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-110; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
for r in 1 2; do for cfg in GRAPE_SIBLINGS=0 X=1; do
  gb $cfg examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
  for b in 1 16; do
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
  done
done; done
echo "== profile bert b=16 eager"
$B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --backend cuda --executor eager --warmup 5 --iters 30 --profile 2>&1 | head -20
echo "total $(( $(date +%s) - t0 )) s"
