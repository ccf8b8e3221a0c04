#!/usr/bin/env bash
# GPU run 79 (the head): the session's closing figures with their peers in the same run.
# bench/run.sh without the shapes sweep and the kernel table (decode eager + cold/warm build +
# PyTorch decode peer; overhead eager + PyTorch; beam_search against its PyTorch peer); graph
# executor: decode_step, overhead, generate, BERT b=1/b=16; bench_kernels --ncu on the BERT shapes.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD
B=$PWD/build-carry; R=/tmp/r79; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_KERNELS=1 timeout 330 bash bench/run.sh $B/grape $R/run > $R/run.log 2>&1
echo "run.sh rc=$? $(( $(date +%s) - t0 )) s"; cat $R/run/report.txt 2>/dev/null | head -30; tail -12 $R/run.log | cut -c1-200
export GRAPE_CACHE_DIR=$R/run/kernel-cache
python3 -c "import numpy as np; r=np.random.default_rng(1); [np.save(f'$D/ids{b}.npy', r.integers(0, 30522, (b, 128)).astype(np.int32)) or np.save(f'$D/mask{b}.npy', np.ones((b, 128), bool)) for b in (1, 16)]"
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32))"
gb() { echo "== $*" | cut -c1-110; $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency" | head -1; }
{
gb examples/gpt2.grp --entry decode_step --weights $R/run/gpt2.safetensors --input tok=$R/run/tok.npy --input p=$R/run/p.npy --executor graph --warmup 20 --iters 500
gb bench/overhead/overhead.grp --input x=$R/run/x_overhead.npy --executor graph --warmup 20 --iters 500
gb examples/gpt2.grp --entry generate --weights $R/run/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
for b in 1 16; do
  gb examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids$b.npy --input mask=$D/mask$b.npy --executor graph --warmup 10 --iters 200
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
echo "elapsed $(( $(date +%s) - t0 )) s"
timeout 200 python3 bench/kernels/bench_kernels.py $B/grape $R/k --only "bert" --ncu > $R/kernels-bert.txt 2>&1
grep -E "^shape|^bert|^attention" $R/kernels-bert.txt
rm -rf $R/k/*.safetensors $R/k/*.npy $R/run/*.safetensors $R/run/kernel-cache $R/run/*.npy $R/run/beam/*.safetensors 2>/dev/null
tar czf $OUT/r79.tgz -C /tmp r79
echo "total $(( $(date +%s) - t0 )) s"
