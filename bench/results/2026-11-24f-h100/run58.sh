#!/usr/bin/env bash
# GPU run 58 (attention_mma: no register cap, keys2 only when the items fit one block per SM): the
# attention GPU tests; bench_kernels --ncu attention; BERT forward b=1/16 (graph, twice) and its
# per-kernel profile at b=1; overhead, decode_step, generate (graph).
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r58; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
timeout 300 $B/grape_gpu_tests --gtest_color=no --gtest_filter="*Attention*:Autotune.*:GpuParity.Bert*" > $R/gpu-tests.log 2>&1
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED" $R/gpu-tests.log
timeout 150 python3 bench/kernels/bench_kernels.py $B/grape /tmp/bk --only attention --ncu > $R/kernels-attention.txt 2>&1
cat $R/kernels-attention.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32))"
gb() { echo "== $*" | cut -c1-150; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|autotuning" | head -2; }
{
for r in 1 2; do
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 200
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 200
done
gb bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
gb examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
gb examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
} > $R/bench.txt 2>&1
cat $R/bench.txt
$B/grape bench examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --backend cuda --executor eager --profile --warmup 5 --iters 20 > $R/profile-bert-b1.txt 2>&1
head -40 $R/profile-bert-b1.txt
tar czf $OUT/r58.tgz -C /tmp r58
echo "total $(( $(date +%s) - t0 )) s"
