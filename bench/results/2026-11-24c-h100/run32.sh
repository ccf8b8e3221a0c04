#!/usr/bin/env bash
# GPU run 32 (head): the whole GPU suite with PDL (blocks-exit trigger), folded selects and IF
# regions; bench/beam with its peer; overhead with its peer; IF regions from 4 steps vs the
# default 32 on generate and beam_search.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r32; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
grep TIMING $R/gpu-tests.log
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(2); np.save('$D/gen_prompt.npy', r.integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32)); np.save('$D/beam_prompt.npy', np.random.default_rng(1).integers(0, 50256, (1, 64)).astype(np.int32))"
gb() { local cfg=$1; shift; echo "== $cfg $*" | cut -c1-150; env $cfg $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|kernels per" | head -2; }
{
for r in 1 2; do
  gb X=1 bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
  gb GRAPE_GRAPH_PDL=0 bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
done
gb X=1 examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 500
for cfg in X=1 GRAPE_GRAPH_IF_MIN_STEPS=4 X=1 GRAPE_GRAPH_IF_MIN_STEPS=4; do
  gb $cfg examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5
  gb $cfg examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --executor graph --warmup 1 --iters 5
done
} > $R/bench.txt 2>&1
cat $R/bench.txt
python3 bench/overhead/peer_torch.py $D/x_ovh.npy 100 $R/torch_overhead.npy $R/torch_overhead.json > /dev/null 2>&1
python3 -c "import json; d=json.load(open('$R/torch_overhead.json')); print('torch overhead graph median ms', d['cuda_graph']['median_ms'])"
timeout 240 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$?"; grep -E 'tokens Grape vs peer' $R/beam.log | tail -1 | cut -c1-300; grep -A7 '^| variant' $R/beam.log | tail -7
cp /tmp/beam/*.json /tmp/beam/*.md $R/ 2>/dev/null
tar czf $OUT/r32.tgz -C /tmp r32
echo "total $(( $(date +%s) - t0 )) s"
