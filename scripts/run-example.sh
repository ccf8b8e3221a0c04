#!/usr/bin/env bash
# The main job: build Grape (Release, build/grape) and run a real model from examples/ (on the GPU
# when there is one, else on the CPU).
#
# GPT-2 small at its real sizes (examples/gpt2.grp: 12 layers, 768 wide, 12 heads, 50257-token
# vocabulary, KV cache of 256 positions) with deterministic random weights (--random-weights 1),
# entry `generate`: greedy decoding of NEW tokens after a short prompt. `--backend auto` uses the
# CUDA executor where a GPU is present and otherwise the CPU reference backend.
#
# Writes the inputs and outputs to out/gpt2-generate/ (out0.npy = the generated ids) and prints the
# generated token ids and the wall time.
#
# Environment: NEW (new tokens, default 8), PROMPT (comma-separated GPT-2 token ids, default
# "464,2068,7586,21831" = "The quick brown fox"), GRAPE_JOBS (build jobs, default: number of cores).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
NEW=${NEW:-8}
PROMPT=${PROMPT:-464,2068,7586,21831}
JOBS=${GRAPE_JOBS:-$(nproc)}
OUT=out/gpt2-generate

scripts/setup.sh

echo "=== build (Release, build/grape) ==="
t0=$(date +%s)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE="$(command -v python3)" >/dev/null
cmake --build build -j"$JOBS" --target grape
echo "build: $(($(date +%s) - t0)) s"

echo "=== GPT-2 small (124M, random weights), generate, $NEW new tokens, --backend auto ==="
rm -rf "$OUT"
mkdir -p "$OUT"
python3 - "$OUT" "$PROMPT" "$NEW" <<'EOF'
import sys
import numpy as np
out, prompt, new = sys.argv[1], sys.argv[2], int(sys.argv[3])
np.save(f"{out}/prompt.npy", np.array([[int(t) for t in prompt.split(",")]], np.int32))
np.save(f"{out}/max_new.npy", np.array(new, np.int32))
EOF

# N (the length of generate's result) = the number of new tokens; everything else at its real size.
cmd=(build/grape run examples/gpt2.grp --entry generate -D N="$NEW" --random-weights 1
     --input prompt="$OUT/prompt.npy" --input max_new="$OUT/max_new.npy" --output "$OUT" --backend auto)
echo "${cmd[*]}"
t0=$(date +%s.%N)
"${cmd[@]}"
t1=$(date +%s.%N)

python3 - "$OUT" "$PROMPT" <<'EOF'
import sys
import numpy as np
out, prompt = sys.argv[1], sys.argv[2]
ids = np.load(f"{out}/out0.npy")
print("prompt token ids:   ", prompt.replace(",", " "))
print("generated token ids:", " ".join(str(int(t)) for t in ids.reshape(-1)))
print(f"(shape {list(ids.shape)}, dtype {ids.dtype}; written to {out}/out0.npy)")
EOF
python3 -c "print(f'wall time of grape run: {$t1 - $t0:.2f} s')"
