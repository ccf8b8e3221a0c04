#!/usr/bin/env bash
# Full Nsight Compute reports (every section: throughput, occupancy, stall reasons, memory tables)
# of a few kernels, for finding out why one is slow:
#   bench/ncu_details.sh GRAPE_BINARY OUT_DIR     (after bench/run.sh wrote OUT_DIR's decode inputs)
# Writes OUT_DIR/details_decode.txt (the first 8 kernels of a decode_step call: embedding, then
# layer 0's products, cache updates and attention) and OUT_DIR/details_bert16_mma.txt (the first two
# tensor-core GEMMs of BERT b=16), plus the .ncu-rep files for the Nsight Compute GUI.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-$ROOT/build/grape}
D=${2:-$ROOT/out/bench}
mkdir -p "$D"
export GRAPE_CACHE_DIR="$D/kernel-cache"
details() {  # name, launch-skip, launch-count, kernel-name regex, then the grape bench arguments
  local name=$1 skip=$2 count=$3 kname=$4
  shift 4
  # --executor eager: the skip counts assume one launch per kernel (the default, auto, may run a graph).
  "$G" bench "$@" --executor eager --warmup 0 --iters 1 >/dev/null  # builds the kernels outside the profile
  ncu --set full --kernel-name "$kname" --launch-skip "$skip" --launch-count "$count" -f -o "$D/details_$name" \
    "$G" bench "$@" --executor eager --warmup 1 --iters 1 >/dev/null 2>&1 || true
  ncu -i "$D/details_$name.ncu-rep" --page details >"$D/details_$name.txt" 2>&1 || true
  echo "$D/details_$name.txt: $(grep -c 'Duration' "$D/details_$name.txt" || true) kernels"
}
if [ -f "$D/gpt2.safetensors" ]; then
  n=$("$G" bench "$ROOT/examples/gpt2.grp" --entry decode_step --weights "$D/gpt2.safetensors" --input "tok=$D/tok.npy" \
    --input "p=$D/p.npy" --backend cuda --executor eager --warmup 0 --iters 1 --json |
    python3 -c "import json,sys; print(json.load(sys.stdin)['kernels_per_call'])")
  # Skips the warm-up call: the profiled kernels are the timed call's first 8.
  details decode "$n" 8 "regex:grape_kernel.*" "$ROOT/examples/gpt2.grp" --entry decode_step \
    --weights "$D/gpt2.safetensors" --input "tok=$D/tok.npy" --input "p=$D/p.npy" --backend cuda
fi
python3 -c "import numpy as np; r=np.random.default_rng(16); np.save('$D/bert_ids16.npy', r.integers(0, 30522, (16, 128)).astype(np.int32)); np.save('$D/bert_mask16.npy', np.ones((16, 128), bool))"
details bert16_mma 0 2 "regex:grape_kernel_mma" "$ROOT/examples/bert.grp" --entry forward --random-weights 1 \
  --input "ids=$D/bert_ids16.npy" --input "mask=$D/bert_mask16.npy" --backend cuda
