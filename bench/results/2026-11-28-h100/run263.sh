#!/usr/bin/env bash
# GPU run 263 (thirty-ninth session): the step counter polled relaxed with one acquire fence after
# (default now) against ld.acquire polls (GRAPE_DECODER_POLL_ACQUIRE=1): traces, ncu and grape bench
# of decode_step at position 128 side by side; every decoder and mono test; PyTorch's logits.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 280 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run263-tests.log 2>&1
echo "tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run263-tests.log | head -30
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
tr() { GRAPE_MONO_TRACE=$R/run263-trace-$1.txt timeout 100 $C/grape bench "${B[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1; echo "== $1"; grep -E "^(0|1|2|3|24) |total" $R/run263-trace-$1.txt; }
tr relaxed
GRAPE_DECODER_POLL_ACQUIRE=1 tr acquire
tr relaxed-again
GRAPE_DECODER_POLL_ACQUIRE=1 tr acquire-again
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
ncu_of() {
  timeout 100 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${B[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram|rror"
}
bench() { timeout 120 $C/grape bench "${B[@]}" --warmup 20 --iters 300 --executor $1 2>&1 | grep -E "latency|plan|rror"; }
{
  ncu_of | sed "s/^/ncu relaxed: /"
  GRAPE_DECODER_POLL_ACQUIRE=1 ncu_of | sed "s/^/ncu acquire: /"
  bench graph | sed "s/^/bench graph: /"
  bench mono | sed "s/^/bench relaxed: /"
  GRAPE_DECODER_POLL_ACQUIRE=1 bench mono | sed "s/^/bench acquire: /"
  bench mono | sed "s/^/bench relaxed: /"
} | tee $R/run263-bench.txt
timeout 120 $C/grape run "${B[@]}" --executor mono --output $D/mono > /dev/null 2>&1; echo "run rc=$?"
timeout 200 python3 bench/decode/peer_torch.py $D/gpt2.safetensors $D/tok.npy 128 $D/torch_logits.npy $R/run263-torch.json --no-compile > /dev/null 2>&1; echo "torch rc=$?"
grep -A2 cuda_graph $R/run263-torch.json | tr -d '\n '; echo
python3 - "$D" <<'PY' | tee $R/run263-logits.txt
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_logits.npy").astype(np.float64)
g = np.load(d + "/mono/out0.npy").astype(np.float64).reshape(t.shape)
print("mono decoder plan vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (
    np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
