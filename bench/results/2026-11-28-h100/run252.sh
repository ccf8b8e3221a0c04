#!/usr/bin/env bash
# GPU run 252 (thirty-eighth session): the mono executor's decoder plan, first run: its GPU tests
# and the mono executor's, then GPT-2 small decode_step (fp16, 5 rows, position 128) under graph
# and under mono (the decoder plan) in the same run, with the PyTorch peer (CUDA graph) and its
# logits, against which the decoder plan's logits are compared.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=/tmp/gc
timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run252-tests.log 2>&1
echo "tests rc=$?"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run252-tests.log | head -40
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for ex in graph mono graph mono; do
  timeout 120 $C/grape bench "${B[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency|plan|error" | sed "s/^/decode_step $ex: /"
done | tee $R/run252-bench.txt
timeout 120 $C/grape run "${B[@]}" --executor mono --output $D/mono > $R/run252-run.txt 2>&1; echo "run rc=$?"
timeout 200 python3 bench/decode/peer_torch.py $D/gpt2.safetensors $D/tok.npy 128 $D/torch_logits.npy $R/run252-torch.json --no-compile > /dev/null 2>&1; echo "torch rc=$?"
cat $R/run252-torch.json
ls $D/mono
python3 - "$D" <<'PY' | tee $R/run252-logits.txt
import glob, sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_logits.npy").astype(np.float64)
g = np.load(d + "/mono/out0.npy").astype(np.float64).reshape(t.shape)
print("mono decoder plan vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (
    np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
