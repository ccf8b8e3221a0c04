#!/usr/bin/env bash
# Sum of kernel times per call (Nsight Compute), the figure the fast-kernel targets are stated in:
#   bench/profile.sh GRAPE_BINARY OUT_DIR     (after bench/run.sh wrote OUT_DIR's decode inputs)
# For decode_step (GPT-2 small, batch 5, past 128) and BERT-base forward (s=128, batch 1 and 16),
# one profiled call after one warm-up call; writes OUT_DIR/profile_*.csv and prints the sums.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-$ROOT/build/grape}
D=${2:-$ROOT/out/bench}
mkdir -p "$D"
export GRAPE_CACHE_DIR="$D/kernel-cache"
NCU=(ncu --metrics gpu__time_duration.sum,dram__bytes.sum,launch__grid_size --csv)
prof() {  # name, then the grape bench arguments
  local name=$1; shift
  # Warm-up call builds the kernels; the profiled run skips its kernels by count.
  local n
  # --executor eager: one launch per kernel, in program order (the default, auto, may run a graph).
  n=$("$G" bench "$@" --executor eager --warmup 0 --iters 1 --json | python3 -c "import json,sys; print(json.load(sys.stdin)['kernels_per_call'])")
  "${NCU[@]}" --launch-skip "$n" --launch-count "$n" "$G" bench "$@" --executor eager --warmup 0 --iters 2 >"$D/profile_$name.csv" 2>/dev/null || true
  python3 "$ROOT/bench/ncu_sum.py" "$name" "$D/profile_$name.csv"
}
if [ -f "$D/gpt2.safetensors" ]; then
  prof decode_step "$ROOT/examples/gpt2.grp" --entry decode_step --weights "$D/gpt2.safetensors" \
    --input "tok=$D/tok.npy" --input "p=$D/p.npy" --backend cuda
fi
for b in 1 16; do
  python3 -c "import numpy as np; r=np.random.default_rng($b); np.save('$D/bert_ids$b.npy', r.integers(0, 30522, ($b, 128)).astype(np.int32)); np.save('$D/bert_mask$b.npy', np.ones(($b, 128), bool))"
  prof "bert_b$b" "$ROOT/examples/bert.grp" --entry forward --random-weights 1 \
    --input "ids=$D/bert_ids$b.npy" --input "mask=$D/bert_mask$b.npy" --backend cuda
done
