#!/usr/bin/env bash
# GPU run 226 (thirty-fifth session), the final library code: (1) Plan/Executors.Bert/0 alone (run
# 225's fourth shard reached its 270 s limit while running it; it passed in run 224); (2)
# decode_step graph, 2 rounds; (3) bench/beam with its PyTorch peer (3 iterations).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gt timeout 120 $C/grape_gpu_tests --gtest_color=no --gtest_filter='Plan/Executors.Bert/*' > $R/run226-bert.log 2>&1
echo "bert rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED) " $R/run226-bert.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/k
for round in 1 2; do
  timeout 40 $C/grape bench examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step round $round: /"
done | tee $R/run226-decode.txt
left=$(( 330 - ($(date +%s) - t0) ))
echo "beam bench with $left s"
timeout $left python3 bench/beam/bench_beam.py --grape $C/grape --out $D/beamb --iters 3 > $R/run226-beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; tail -9 $R/run226-beam.log
cp $D/beamb/beam_summary.json $R/run226-beam_summary.json 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
