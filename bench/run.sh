#!/usr/bin/env bash
# Runs the benchmarks on a GPU machine: Grape and its PyTorch peers in the same run, outputs
# checked against each other before anything is timed, then a table of ratios.
#   bench/run.sh [GRAPE_BINARY] [OUT_DIR]      (docs/gpu-testing.md shows the device-tool call)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-$ROOT/build/grape}
D=${2:-$ROOT/out/bench}
mkdir -p "$D"
export PYTHONUNBUFFERED=1
nvidia-smi -L || true

# decode
python3 "$ROOT/bench/decode/make_inputs.py" "$D"
DEC=("$ROOT/examples/gpt2.grp" --entry decode_step --weights "$D/gpt2.safetensors" --input "tok=$D/tok.npy"
     --input "p=$D/p.npy" --backend cuda)
export GRAPE_CACHE_DIR="$D/kernel-cache"
rm -rf "$GRAPE_CACHE_DIR"
"$G" bench "${DEC[@]}" --warmup 0 --iters 1 --json >"$D/grape_decode_cold.json"
"$G" bench "${DEC[@]}" --warmup 0 --iters 1 --json >"$D/grape_decode_warm.json"
"$G" run "${DEC[@]}" --output "$D/grape_decode"
"$G" bench "${DEC[@]}" --executor eager --warmup 20 --iters 200 --json >"$D/grape_decode.json"
# The graph executor, and mono, which runs decode_step as its decoder plan (docs/execution.md).
"$G" bench "${DEC[@]}" --executor graph --warmup 20 --iters 200 --json >"$D/grape_decode_graph.json"
"$G" run "${DEC[@]}" --executor mono --output "$D/grape_decode_mono"
"$G" bench "${DEC[@]}" --executor mono --warmup 20 --iters 200 --json >"$D/grape_decode_mono.json"
python3 "$ROOT/bench/decode/peer_torch.py" "$D/gpt2.safetensors" "$D/tok.npy" 128 \
  "$D/torch_decode_logits.npy" "$D/torch_decode.json" ${GRAPE_BENCH_NO_COMPILE:+--no-compile} >/dev/null

# overhead
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
OVH=("$ROOT/bench/overhead/overhead.grp" --input "x=$D/x_overhead.npy" --backend cuda)
"$G" run "${OVH[@]}" --output "$D/grape_overhead"
"$G" bench "${OVH[@]}" --executor eager --warmup 20 --iters 200 --json >"$D/grape_overhead.json"
python3 "$ROOT/bench/overhead/peer_torch.py" "$D/x_overhead.npy" 100 "$D/torch_overhead.npy" "$D/torch_overhead.json"

python3 "$ROOT/bench/report.py" "$D" | tee "$D/report.txt"

# Every matrix-product and attention shape of the workloads, one op per program, beside PyTorch
# (bench/kernels/bench_kernels.py; GRAPE_BENCH_NO_KERNELS=1 skips it).
if [ "${GRAPE_BENCH_NO_KERNELS:-0}" != 1 ]; then
  python3 "$ROOT/bench/kernels/bench_kernels.py" "$G" "$D/kernels" | tee "$D/kernels.txt"
fi

# BERT-base forward at batch 1 and 16 beside PyTorch eager / graph / graph + SDPA, hidden states
# compared (bench/bert/bench_bert.py; GRAPE_BENCH_NO_BERT=1 skips it).
if [ "${GRAPE_BENCH_NO_BERT:-0}" != 1 ]; then
  python3 "$ROOT/bench/bert/bench_bert.py" --grape "$G" --out "$D/bert"
fi

# Control flow and changing shapes (issue 8): GPT-2 beam_search against a PyTorch graphed step with
# a Python beam loop (bench/beam), GPT-2 prefill at every length 1..1024 against one PyTorch graph
# per length (bench/shapes). GRAPE_BENCH_NO_BEAM=1 / GRAPE_BENCH_NO_SHAPES=1 skip them.
if [ "${GRAPE_BENCH_NO_BEAM:-0}" != 1 ]; then
  python3 "$ROOT/bench/beam/bench_beam.py" --grape "$G" --out "$D/beam" | tail -12
fi
# Its candidate selection alone (log_softmax + top-k of 5 x 50257) beside PyTorch
# (bench/beam_logic/run.sh; GRAPE_BENCH_NO_BEAM=1 skips it too).
if [ "${GRAPE_BENCH_NO_BEAM:-0}" != 1 ]; then
  "$ROOT/bench/beam_logic/run.sh" "$G" "$D/beam_logic"
fi
if [ "${GRAPE_BENCH_NO_SHAPES:-0}" != 1 ]; then
  python3 "$ROOT/bench/shapes/bench_shapes.py" --grape "$G" --out "$D/shapes" --iters 30 --warmup 3 | tail -12
fi
