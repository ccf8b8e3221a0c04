#!/usr/bin/env bash
# Run 300 (forty-fourth session): lm_head's listed rounds before the claims, once more (run 299 had
# 3 rounds 1.4 us faster than 4, run 297's run-time-switch kernel had them equal): ncu, three
# rounds interleaved, 4 (the default), 3 and 2, with run 298's build-carry/grape_cx.
cd "$(dirname "$0")/../../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_cx GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
variant() {
  local name=$1
  shift 1
  env "$@" GRAPE_CACHE_DIR=/tmp/gc-$name timeout 30 $N --clock-control none \
    --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $C/grape_cx bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' |
    tr '\n' ' ' | sed "s/^/ncu $name: /"
  echo
}
for round in 1 2 3; do
  variant listed4
  variant listed3 GRAPE_DECODER_LM_CLAIM=3
  variant listed2 GRAPE_DECODER_LM_CLAIM=2
done
echo "total $(( $(date +%s) - t0 )) s"
