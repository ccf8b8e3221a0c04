#!/usr/bin/env bash
# GPU run 287 (forty-first session): opt4, a layer step's rows as one multicast bulk copy a cluster
# (each block reads an eighth of the 15 KB from L2; run 286's stamps put the steps' skew in the
# rows' L2 loads: 0.6-1.5 us). Decoder-plan tests on opt4 (multicast on and off); ncu of opt3
# (HEAD 21d06e9) against opt4 with GRAPE_DECODER_MULTICAST=1 and 0; opt4's trace and stamps; then
# bench/run.sh's decode part on opt4 (eager, graph, mono, PyTorch with a CUDA graph, logits).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape_opt4
GRAPE_CACHE_DIR=/tmp/gd timeout 100 $C/grape_gpu_tests --gtest_color=no \
  --gtest_filter='DecoderPlan.FiveRows*:DecoderPlan.RowsLoaded*:DecoderPlan.ALong*:DecoderPlan.OneAndEight*:DecoderPlan.BeamDecode*:DecoderPlan.TheDecodeForm*:DecoderPlan.PastKeys*' > $R/run287-tests.log 2>&1
rc=$?; echo "tests rc=$rc $(( $(date +%s) - t0 )) s"; grep -E "^\[ +(OK|FAILED|PASSED|SKIPPED) |Failure|relative|plan '" $R/run287-tests.log | head -20
[ $rc = 0 ] || { grep -B5 -A20 "Failure" $R/run287-tests.log | head -60; exit 1; }
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
A=(examples/gpt2.grp --weights $D/gpt2.safetensors --backend cuda --entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
N=$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)
for v in opt3:1 opt4:1 opt4:0 opt4:1; do
  b=${v%%:*}; mc=${v##*:}
  GRAPE_DECODER_MULTICAST=$mc GRAPE_CACHE_DIR=/tmp/gc-$b GRAPE_COMPILE_WORKER=$C/grape_$b timeout 60 $N --clock-control none --cache-control none --metrics gpu__time_duration.sum -k grape_decoder --launch-skip 5 --launch-count 5 \
    $C/grape_$b bench "${A[@]}" --executor mono --warmup 2 --iters 10 2>&1 | grep -E "duration|rror" | sed "s/^/ncu $b mc$mc: /"
done
GRAPE_CACHE_DIR=/tmp/gc-opt4 GRAPE_COMPILE_WORKER=$C/grape_opt4 GRAPE_MONO_TRACE=$R/run287-trace.txt GRAPE_MONO_TRACE_STAMPS=$R/run287-stamps.txt \
  timeout 60 $C/grape_opt4 bench "${A[@]}" --executor mono --warmup 5 --iters 20 > /dev/null 2>&1
grep -E "^(1|2|3|12|13|24) |total" $R/run287-trace.txt
python3 scripts/decoder_stamps.py $R/run287-stamps.txt 2 3 12 13 > $R/run287-analysis.txt; cat $R/run287-analysis.txt
echo "a/b $(( $(date +%s) - t0 )) s"
export GRAPE_COMPILE_WORKER=$C/grape_opt4
unset GRAPE_TUNE
GRAPE_BENCH_NO_KERNELS=1 GRAPE_BENCH_NO_BERT=1 GRAPE_BENCH_NO_BEAM=1 GRAPE_BENCH_NO_SHAPES=1 GRAPE_BENCH_NO_COMPILE=1 \
  timeout 120 bench/run.sh $C/grape_opt4 $R/bench > $R/run287-bench.log 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
cat $R/bench/report.txt 2>/dev/null
python3 - $R/bench <<'PY'
import sys, numpy as np
d = sys.argv[1]
t = np.load(d + "/torch_decode_logits.npy").astype(np.float64)
for name in ("grape_decode", "grape_decode_mono"):
    g = np.load(d + "/" + name + "/out0.npy").astype(np.float64).reshape(t.shape)
    print("%s vs torch: rel L2 %.3e, max |diff| %.4f, argmax equal %d/%d" % (name,
        np.linalg.norm(g - t) / np.linalg.norm(t), np.abs(g - t).max(), (g.argmax(1) == t.argmax(1)).sum(), t.shape[0]))
PY
cp $R/bench/report.txt $R/run287-report.txt 2>/dev/null
rm -rf $R/bench
echo "total $(( $(date +%s) - t0 )) s"
