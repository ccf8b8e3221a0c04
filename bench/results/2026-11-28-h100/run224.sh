#!/usr/bin/env bash
# GPU run 224 (thirty-fifth session; branch experiment/gemv-async-exchange): gemv_mma's cluster
# exchange of K-split sums by st.async, each store counting its bytes on the owner's mbarrier,
# instead of st.shared::cluster + a full cluster barrier (ERRBAR + barrier: 8% of c_fc's samples,
# run 217). Correctness first (matrix products, row variants, GPT-2 parity, mono, plan/graph,
# timeline; memcheck and racecheck over the matrix-product cases), then GRAPE_GEMV_XCHG=0 vs 1:
# decode_step timelines with marks, latency in 2 alternating rounds, beam_search, generate.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
F='Paths/GpuMatrixProduct.*:RowVariants.*:GpuParity.Gpt2*:GpuParity.Sibling*:MonoExecutor.*:Plan/Executors.*:KernelTimeline.*'
for i in 0 1 2 3; do GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 180 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/run224-gpu-tests-$i.log 2>&1 & done; wait
echo "gpu tests $(( $(date +%s) - t0 )) s"; cat $R/run224-gpu-tests-*.log | grep -E "^\[  (PASSED|FAILED) |^\[  FAILED"; gzip -f $R/run224-gpu-tests-*.log
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
for tool in memcheck racecheck; do
  for i in 0 1; do GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 100 $S --tool $tool $C/grape_gpu_tests --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*:RowVariants.*' > $R/run224-$tool-$i.log 2>&1 & done; wait
  echo "$tool $(( $(date +%s) - t0 )) s: $(cat $R/run224-$tool-*.log | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tr '\n' ' ') $(cat $R/run224-$tool-*.log | grep -E '^\[  (PASSED|FAILED) ' | tr '\n' ' ')"
  gzip -f $R/run224-$tool-*.log
done
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
v() { case $1 in x0) echo "$C/grape 0";; x1) echo "$C/grape 1";; esac; }
for x in x0 x1; do
  set -- $(v $x)
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_XCHG=$2 GRAPE_CACHE_DIR=$D/t$x GRAPE_KERNEL_TIMELINE=$R/run224-timeline-$x.txt $1 bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== $x"; python3 scripts/timeline_summary.py $R/run224-timeline-$x.txt
done | tee $R/run224-marks.txt
for round in 1 2; do
  for x in x0 x1; do
    set -- $(v $x)
    GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_XCHG=$2 GRAPE_CACHE_DIR=$D/k$x $1 bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run224-decode.txt
for x in x0 x1; do
  set -- $(v $x)
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_XCHG=$2 GRAPE_CACHE_DIR=$D/k$x timeout 90 $1 bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_XCHG=$2 GRAPE_CACHE_DIR=$D/k$x timeout 90 $1 bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run224-decode.txt
for f in $R/run224-timeline-*.txt; do gzip -f $f; done
echo "total $(( $(date +%s) - t0 )) s"
