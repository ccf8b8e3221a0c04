#!/usr/bin/env bash
# GPU run 272 (fortieth session): does the producer warp's spinning take issue slots from the
# compute warps of its SM sub-partition (warps 0 and 4)? grape_opt2 (run 271's kernel, committed
# as 4c4cb8e), grape_opt3 (the producer sleeps 32 ns between its pacing clock reads and 64 ns
# between its polls of the ring's consumed count) and grape_opt3b (only the poll sleeps), each
# traced, under ncu and grape bench at position 128.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for b in opt2 opt3 opt3b; do
  export GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b
  GRAPE_MONO_TRACE=$R/run272-trace-$b.txt timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "== $b"; grep -E "^(0|1|2|3|24) |total" $R/run272-trace-$b.txt
  timeout 60 $C/grape_$b run "${A[@]}" --executor mono --output $D/out-$b > /dev/null 2>&1; echo "run $b rc=$?"
  timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b p128: /"
done
for b in opt2 opt3 opt3b opt2 opt3 opt3b; do
  GRAPE_CACHE_DIR=/tmp/gc-$b timeout 60 $C/grape_$b bench "${A[@]}" --executor mono --warmup 20 --iters 300 2>&1 | grep -E "latency|rror" | sed "s/^/bench p128 $b: /"
done
python3 - $D <<'PY'
import sys, numpy as np
d = sys.argv[1]
a = np.load(d + "/out-opt2/out0.npy").astype(np.float64)
for n in ("opt3", "opt3b"):
    b = np.load(d + "/out-" + n + "/out0.npy").astype(np.float64)
    print("%s vs opt2 logits: rel L2 %.3e, argmax equal %d/%d" % (n, np.linalg.norm(a - b) / np.linalg.norm(a), (a.argmax(-1) == b.argmax(-1)).sum(), a.shape[0]))
PY
echo "total $(( $(date +%s) - t0 )) s"
