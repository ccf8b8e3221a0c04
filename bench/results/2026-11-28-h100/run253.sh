#!/usr/bin/env bash
# GPU run 253 (thirty-eighth session): the decoder plan after run 252's fixes (8 rows: the output
# reduction looped over too few threads; past keys/values in the ring where they fit): its tests,
# the whole GPU suite (4 shards), decode_step graph vs mono (decoder plan) with the pace and the
# keys/values' place varied, ncu's kernel time of the decoder kernel, compute-sanitizer memcheck of
# one decoder-plan run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*' > $R/run253-decoder-tests.log 2>&1
echo "decoder tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run253-decoder-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
bench() { timeout 120 $C/grape bench "${B[@]}" --warmup 20 --iters 300 "$@" 2>&1 | grep -E "latency|plan|rror"; }
{
  bench --executor graph | sed "s/^/graph: /"
  bench --executor mono | sed "s/^/mono: /"
  GRAPE_DECODER_KV_RING=0 bench --executor mono | sed "s/^/mono kv from L2: /"
  GRAPE_DECODER_PACE=0 bench --executor mono | sed "s/^/mono unpaced: /"
  GRAPE_DECODER_PACE=400 bench --executor mono | sed "s/^/mono pace 400: /"
  bench --executor graph | sed "s/^/graph: /"
  bench --executor mono | sed "s/^/mono: /"
} | tee $R/run253-bench.txt
timeout 120 $C/grape run "${B[@]}" --executor mono --output $D/mono > /dev/null 2>&1; echo "run rc=$?"
timeout 200 python3 bench/decode/peer_torch.py $D/gpt2.safetensors $D/tok.npy 128 $D/torch_logits.npy $R/run253-torch.json --no-compile > /dev/null 2>&1; echo "torch rc=$?"
grep -A2 cuda_graph $R/run253-torch.json | tr -d '\n '; echo
python3 - "$D" <<'PY' | tee $R/run253-logits.txt
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_logits.npy").astype(np.float64)
g = np.load(d + "/mono/out0.npy").astype(np.float64).reshape(t.shape)
print("mono decoder plan vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (
    np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
timeout 120 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
  $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram__|rror" | sed "s/^/ncu (no clock or cache control): /" | tee $R/run253-ncu.txt
timeout 120 $N --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
  $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|rror" | sed "s/^/ncu (defaults): /" | tee -a $R/run253-ncu.txt
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
timeout 200 $S --tool memcheck $C/grape run "${B[@]}" --executor mono > $R/run253-memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|rror" $R/run253-memcheck.txt | tail -3
unset GRAPE_TUNE
echo "before suite $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 300 $C/grape_gpu_tests --gtest_color=no > $R/run253-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run253-gpu-tests.[0-3].log > $R/run253-gpu-tests.log; rm $R/run253-gpu-tests.[0-3].log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run253-gpu-tests.log
gzip -f $R/run253-gpu-tests.log
echo "total $(( $(date +%s) - t0 )) s"
