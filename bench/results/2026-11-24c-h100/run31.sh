#!/usr/bin/env bash
# GPU run 31: programmatic dependent launch, the successor launched early (GRAPE_GRAPH_PDL_EARLY=1,
# run 30's kernels) or as the predecessor's blocks exit (the default now), against no PDL.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r31; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
timeout 200 $B/grape_gpu_tests --gtest_color=no --gtest_filter='GraphExecutor.*:AutoExecutor.*:Plan/Executors.*:GpuParity.Gpt2*' > $R/tests.log 2>&1
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/tests.log; grep -c "^\[       OK" $R/tests.log
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32)); np.save('$D/beam_prompt.npy', np.random.default_rng(1).integers(0, 50256, (1, 64)).astype(np.int32))"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-150; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy)
CFGS=("GRAPE_GRAPH_PDL=0" "GRAPE_GRAPH_PDL_EARLY=0" "GRAPE_GRAPH_PDL_EARLY=1")
{
for r in 1 2; do
  for cfg in "${CFGS[@]}"; do
    gb $cfg bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
    gb $cfg "${DEC[@]}" --executor graph --warmup 20 --iters 500
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 300
    gb $cfg examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  done
done
for cfg in "${CFGS[@]}"; do
  gb $cfg examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
  gb $cfg examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --executor graph --warmup 1 --iters 5
done
} > $R/pdl.txt 2>&1
cat $R/pdl.txt
tar czf $OUT/r31.tgz -C /tmp r31
echo "total $(( $(date +%s) - t0 )) s"
