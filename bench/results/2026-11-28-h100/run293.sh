#!/usr/bin/env bash
# GPU run 293 (forty-second session): the attention over the ring's keys and values on the tensor
# cores (attend_keys_mma: a warp's 16 keys as m16n8k16's A, the query in B; the probabilities as
# A of a second product with the values by ldmatrix.trans; the keys' and values' 16-byte chunks
# rotated in place per key beforehand, so that ldmatrix does not hit one bank group).
# Every DecoderPlan test on the new binary (new: CachesFullOfDistinctKeys on both paths,
# RingAttentionWithoutTensorCores); ncu of new with GRAPE_DECODER_KV_MMA=1 and 0 and of prev
# (98584e2), twice each; new's trace; bench/run.sh's decode part on new.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
GRAPE_CACHE_DIR=/tmp/gd timeout 240 $C/grape_gpu_tests --gtest_color=no --gtest_filter='DecoderPlan.*' > $R/run293-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure" $R/run293-tests.log | head -40
[ $rc = 0 ] || { grep -B3 -A12 "Failure" $R/run293-tests.log | head -80; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for v in new:1 new:0 prev:1 new:1 new:0 prev:1; do
  b=${v%%:*}; k=${v##*:}
  [ $b = new ] && bin=$C/grape || bin=$C/grape_prev
  GRAPE_DECODER_KV_MMA=$k GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$bin timeout 60 $N --clock-control none --cache-control none \
    --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 10 \
    $bin bench "${A[@]}" --executor mono --warmup 2 --iters 15 2>&1 | grep -E "duration|rror" | awk '{print $NF}' | tr '\n' ' ' | sed "s/^/ncu $b mma$k: /"; echo
done
for k in 1 0; do
  GRAPE_DECODER_KV_MMA=$k GRAPE_CACHE_DIR=/tmp/gc-new GRAPE_MONO_TRACE=$R/run293-trace-mma$k.txt \
    timeout 60 $C/grape bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
  echo "mma $k:"; grep -E "^(2|3|12|24) |total" $R/run293-trace-mma$k.txt
done
echo "a/b $(( $(date +%s) - t0 )) s"
unset GRAPE_TUNE
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 120 bench/run.sh $C/grape $R/bench > $R/run293-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null | head -8
python3 - $R/bench <<'PY'
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_decode_logits.npy").astype(np.float64)
for name in ("grape_decode", "grape_decode_mono"):
    g = np.load(d + "/" + name + "/out0.npy").astype(np.float64).reshape(t.shape)
    print("%s vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (name,
        np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
cp $R/bench/report.txt $R/run293-report.txt 2>/dev/null
rm -rf $R/bench
echo "total $(( $(date +%s) - t0 )) s"
