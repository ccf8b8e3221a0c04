#!/usr/bin/env bash
# GPU run 199 (thirty-first session, the final code): (1) the Autotune tests (run 198's shard had
# GRAPE_TUNE=0 from the script's environment); (2) compute-sanitizer racecheck + initcheck +
# memcheck over every example and control-flow case on the eager executor, memcheck on the graph
# executor; (3) bench/beam with its peer; (4) decode_step graph, gemv_mma against the FMA loop, three
# rounds alternating; (5) nsys over graphed decode_step replays with each graph node traced (the
# kernels' start and end inside the graph: their overlap under programmatic dependent launch).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
GRAPE_CACHE_DIR=/tmp/gt timeout 120 $C/grape_gpu_tests --gtest_color=no --gtest_filter='Autotune.*' > $R/run199-autotune.log 2>&1
echo "autotune rc $? $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run199-autotune.log
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRAPE_CACHE_DIR=/tmp/gs timeout 230 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools racecheck,initcheck,memcheck \
  --executors eager --jobs 8 > $R/run199-sanitize-eager.log 2>&1
echo "sanitize eager rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san/summary.txt 2>/dev/null; cp $R/san/summary.txt $R/run199-sanitize-eager-summary.txt 2>/dev/null; rm -rf $R/san
GRAPE_CACHE_DIR=/tmp/gs timeout 130 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san --sanitizer $S --tools memcheck \
  --executors graph --jobs 8 > $R/run199-sanitize-graph.log 2>&1
echo "sanitize graph rc=$? $(( $(date +%s) - t0 )) s"; head -4 $R/san/summary.txt 2>/dev/null; cp $R/san/summary.txt $R/run199-sanitize-graph-summary.txt 2>/dev/null; rm -rf $R/san
gzip -f $R/run199-sanitize-*.log
timeout 150 python3 bench/beam/bench_beam.py --grape $C/grape --out $R/beam > $R/run199-beam.log 2>&1
echo "beam rc=$? $(( $(date +%s) - t0 )) s"; tail -12 $R/run199-beam.log
python3 bench/decode/make_inputs.py $D >/dev/null
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
for round in 1 2 3; do
  for m in 1 0; do
    GRAPE_TUNE=0 GRAPE_GEMV_MMA=$m GRAPE_CACHE_DIR=$D/k$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep latency | sed "s/^/decode_step mma=$m round $round: /"
  done
done | tee $R/run199-decode.txt
NS=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NS"
if [ -n "$NS" ]; then
  GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k1 timeout 120 $NS profile --cuda-graph-trace=node -t cuda -o $D/g -f true \
    $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 5 --iters 20 > $D/nsys.log 2>&1
  echo "nsys rc $?"; tail -3 $D/nsys.log
  $NS stats --report cuda_gpu_trace --format csv -o $D/trace $D/g.nsys-rep > /dev/null 2>&1
  ls $D/trace* 2>/dev/null; cp $D/trace*.csv $R/run199-decode-graph-trace.csv 2>/dev/null && gzip -f $R/run199-decode-graph-trace.csv
fi
echo "total $(( $(date +%s) - t0 )) s"
