#!/usr/bin/env bash
# GPU run 30: programmatic dependent launch between the graph's kernel nodes. The whole GPU suite
# (PDL on), then the same-run comparison GRAPE_GRAPH_PDL=0 / 1 on overhead, decode_step, BERT,
# generate and beam_search (graph executor), the PyTorch peers, and decode_step's ncu kernel sum.
cd "$(dirname "$0")/.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=/tmp/r30; D=/tmp/in; mkdir -p $R $D
t0=$(date +%s)
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $B/grape_gpu_tests --gtest_color=no > $R/gt$i.log 2>&1 &
done
wait
cat $R/gt*.log > $R/gpu-tests.log; rm $R/gt*.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/gpu-tests.log
grep -c "^\[       OK" $R/gpu-tests.log
grep -B2 -A12 "Failure" $R/gpu-tests.log | head -40
# inputs
python3 -c "import numpy as np; np.save('$D/x_ovh.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
python3 bench/decode/make_inputs.py $D > /dev/null
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/mask$b.npy', np.ones(($b, 128), bool))"
done
gb() { local pdl=$1; shift; echo "== PDL=$pdl $*" | cut -c1-160; GRAPE_GRAPH_PDL=$pdl $B/grape bench "$@" --backend cuda 2>&1 | grep -E "latency|kernels" | head -3; }
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy)
{
for r in 1 2; do
  for pdl in 0 1; do
    gb $pdl bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor graph --warmup 20 --iters 500
    gb $pdl "${DEC[@]}" --executor graph --warmup 20 --iters 500
    gb $pdl examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids1.npy --input mask=$D/mask1.npy --executor graph --warmup 10 --iters 300
    gb $pdl examples/bert.grp --entry forward --random-weights 1 --input ids=$D/ids16.npy --input mask=$D/mask16.npy --executor graph --warmup 10 --iters 300
  done
done
gb 1 bench/overhead/overhead.grp --input x=$D/x_ovh.npy --executor eager --warmup 20 --iters 300
gb 1 "${DEC[@]}" --executor eager --warmup 20 --iters 300
} > $R/pdl.txt 2>&1
cat $R/pdl.txt
python3 bench/overhead/peer_torch.py $D/x_ovh.npy 100 $R/torch_overhead.npy $R/torch_overhead.json > /dev/null 2>&1
python3 bench/decode/peer_torch.py $D/gpt2.safetensors $D/tok.npy 128 $R/torch_decode_logits.npy $R/torch_decode.json --no-compile > /dev/null 2>&1
python3 -c "
import json
for n in ('overhead', 'decode'):
    try: print(n, json.dumps(json.load(open('$R/torch_' + n + '.json')))[:400])
    except Exception as e: print(n, 'peer failed', e)
"
echo "t $(( $(date +%s) - t0 )) s"
# decode_step: the graph's device time against the sum of its kernel times (ncu, eager order,
# no clock or cache control so short kernels are not inflated)
n=$($B/grape bench "${DEC[@]}" --backend cuda --executor eager --warmup 0 --iters 1 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kernels_per_call'])")
timeout 200 ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv --clock-control none --cache-control none \
  --launch-skip $((n*3)) --launch-count $n $B/grape bench "${DEC[@]}" --backend cuda --executor eager --warmup 2 --iters 2 > $R/ncu_decode.csv 2>/dev/null
python3 bench/ncu_sum.py decode_step $R/ncu_decode.csv | head -4
echo "t $(( $(date +%s) - t0 )) s"
# beam search: the driver (PDL on), then the graph without PDL for the same-run baseline
timeout 240 python3 bench/beam/bench_beam.py --grape $B/grape --out /tmp/beam > $R/beam.log 2>&1
echo "beam rc=$?"; grep -E 'tokens Grape vs peer' $R/beam.log | tail -1 | cut -c1-300; grep -A7 '^| variant' $R/beam.log | tail -7
BEAM=(examples/gpt2.grp --entry beam_search --weights /tmp/beam/gpt2.safetensors --input prompt=/tmp/beam/beam_prompt.npy --executor graph --warmup 1 --iters 5)
python3 -c "import numpy as np; np.save('$D/gen_prompt.npy', np.random.default_rng(2).integers(0, 50256, (5, 64)).astype(np.int32)); np.save('$D/max_new.npy', np.array(128, np.int32))"
GEN=(examples/gpt2.grp --entry generate --weights /tmp/beam/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/max_new.npy --executor graph --warmup 1 --iters 5)
{ for pdl in 0 1 0 1; do gb $pdl "${BEAM[@]}"; done; for pdl in 0 1; do gb $pdl "${GEN[@]}"; done; } > $R/beam-pdl.txt 2>&1
cat $R/beam-pdl.txt
cp /tmp/beam/*.json /tmp/beam/*.md $R/ 2>/dev/null
tar czf $OUT/r30.tgz -C /tmp r30
echo "total $(( $(date +%s) - t0 )) s"
