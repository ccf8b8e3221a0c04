#!/usr/bin/env bash
# Beam search's candidate selection alone (beam_logic.grp: log_softmax of 5 x 50257 logits plus the
# beams' scores, top 10 of the 251285 candidates): Grape's result checked against the CPU
# reference, its kernels timed one by one (grape bench --profile, eager, CUDA events), then the
# PyTorch peer (peer.py, CUDA-graph replay) in the same run.
#   bench/beam_logic/run.sh GRAPE OUT_DIR      (BACKEND=cpu: the check and timing on the CPU, no peer)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 2 ]; then
  echo "usage: $0 GRAPE OUT_DIR   (BACKEND=cpu|cuda, default cuda)" >&2
  exit 2
fi
G=$1
D=$2
BACKEND=${BACKEND:-cuda}
mkdir -p "$D"
python3 -c "
import numpy as np
np.save('$D/logits.npy', (np.random.RandomState(0).randn(5, 50257) * 3).astype(np.float16))
np.save('$D/scores.npy', np.array([0, -1.5, -2, -3, -4], dtype=np.float32))"
P="$HERE/beam_logic.grp"
IN=(--input "logits=$D/logits.npy" --input "scores=$D/scores.npy")
"$G" run "$P" "${IN[@]}" --backend cpu --output "$D/cpu" >/dev/null
"$G" run "$P" "${IN[@]}" --backend "$BACKEND" --output "$D/grape" >/dev/null
python3 -c "
import sys, numpy as np
ok = all((np.load('$D/cpu/out%d.npy' % k) == np.load('$D/grape/out%d.npy' % k)).all() for k in (0, 1))
print('beam_logic: $BACKEND result equals the CPU reference:', ok)
sys.exit(0 if ok else 1)"
if [ "$BACKEND" = cuda ]; then
  "$G" bench "$P" --entry main "${IN[@]}" --backend cuda --executor eager --warmup 20 --iters 300 --profile
  python3 "$HERE/peer.py" "$D/logits.npy" "$D/scores.npy"
else
  "$G" bench "$P" --entry main "${IN[@]}" --backend cpu --warmup 2 --iters 10
fi
