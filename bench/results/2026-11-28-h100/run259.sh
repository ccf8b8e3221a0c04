#!/usr/bin/env bash
# GPU run 259 (thirty-ninth session): the decoder plan's attention reads values 16 bytes a thread
# (four 16-byte loads in flight a thread) instead of one 2-byte load per position, and the
# `decode`/`beam_decode` forms (the position a state) take the plan. Its tests and the mono
# executor's; decode_step graph vs mono at positions 128 (keys/values in the ring, and forced from
# L2) and 200 (from L2: past the ring's 155); the `decode` entry graph vs mono; PyTorch's logits;
# ncu at 128 and 200; racecheck and initcheck of one decoder run.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 280 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*:MonoExecutor.*' > $R/run259-decoder-tests.log 2>&1
echo "decoder tests rc=$? $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run259-decoder-tests.log | head -40
export GRAPE_TUNE=0 GRAPE_CACHE_DIR=/tmp/gc
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/p200.npy', np.array(200, dtype=np.int32))"
B=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
B200=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p200.npy)
BD=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode --input tok=$D/tok.npy)
bench() { timeout 120 $C/grape bench "$@" 2>&1 | grep -E "latency|plan|syncs|rror"; }
{
  bench "${B[@]}" --warmup 20 --iters 300 --executor graph | sed "s/^/p128 graph: /"
  bench "${B[@]}" --warmup 20 --iters 300 --executor mono | sed "s/^/p128 mono: /"
  GRAPE_DECODER_KV_RING=0 bench "${B[@]}" --warmup 20 --iters 300 --executor mono | sed "s/^/p128 mono kv from L2: /"
  bench "${B200[@]}" --warmup 20 --iters 300 --executor graph | sed "s/^/p200 graph: /"
  bench "${B200[@]}" --warmup 20 --iters 300 --executor mono | sed "s/^/p200 mono (kv from L2): /"
  bench "${BD[@]}" --warmup 20 --iters 200 --executor graph | sed "s/^/decode entry (positions 0-219) graph: /"
  bench "${BD[@]}" --warmup 20 --iters 200 --executor mono | sed "s/^/decode entry (positions 0-219) mono: /"
  bench "${BD[@]}" --warmup 20 --iters 200 --executor auto | sed "s/^/decode entry (positions 0-219) auto: /"
  bench "${B[@]}" --warmup 20 --iters 300 --executor mono | sed "s/^/p128 mono: /"
} | tee $R/run259-bench.txt
echo "bench $(( $(date +%s) - t0 )) s"
timeout 120 $C/grape run "${B[@]}" --executor mono --output $D/mono > /dev/null 2>&1; echo "run rc=$?"
timeout 200 python3 bench/decode/peer_torch.py $D/gpt2.safetensors $D/tok.npy 128 $D/torch_logits.npy $R/run259-torch.json --no-compile > /dev/null 2>&1; echo "torch rc=$?"
grep -A2 cuda_graph $R/run259-torch.json | tr -d '\n '; echo
python3 - "$D" <<'PY' | tee $R/run259-logits.txt
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_logits.npy").astype(np.float64)
g = np.load(d + "/mono/out0.npy").astype(np.float64).reshape(t.shape)
print("mono decoder plan vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (
    np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for args in "B" "B200"; do
  eval "A=(\"\${$args[@]}\")"
  timeout 100 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum -k grape_decoder --launch-skip 5 --launch-count 3 \
    $C/grape bench "${A[@]}" --executor mono --warmup 2 --iters 8 2>&1 | grep -E "duration|dram__|rror" | sed "s/^/ncu $args (no clock or cache control): /" | tee -a $R/run259-ncu.txt
done
echo "ncu $(( $(date +%s) - t0 )) s"
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
timeout 100 $S --tool initcheck $C/grape run "${B[@]}" --executor mono > $R/run259-initcheck.txt 2>&1; echo "initcheck rc=$?"
grep -E "ERROR SUMMARY|rror" $R/run259-initcheck.txt | tail -3
timeout 150 $S --tool racecheck --racecheck-report all $C/grape run "${B[@]}" --executor mono > $R/run259-racecheck.txt 2>&1; echo "racecheck rc=$?"
grep -E "RACECHECK SUMMARY|ERROR SUMMARY|hazard|rror" $R/run259-racecheck.txt | tail -5
echo "total $(( $(date +%s) - t0 )) s"
