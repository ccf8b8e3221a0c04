#!/usr/bin/env bash
# GPU run 229 (prepared in the thirty-fifth session, NOT YET RUN; branch
# experiment/gemv-tma-prologue-only): GRAPE_GEMV_TMA=2 takes the copy engine's weight tile only for
# the GEMVs with a row prologue (q/k/v, c_fc: their A waits for the LN statistics), the register
# path for attn/mlp c_proj (run 221: mlp c_proj 0.4 us slower with the tile). Correctness: GPT-2
# parity, plan/graph and timeline tests with TMA=2 (the register path itself is the tested
# TMA=0 path); then TMA=1 (main) against 2: decode_step timelines with marks, latency in 2
# alternating rounds, beam_search, generate.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
F='GpuParity.Gpt2*:GpuParity.Sibling*:Plan/Executors.*:KernelTimeline.*'
for i in 0 1 2 3; do GRAPE_GEMV_TMA=2 GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt$i timeout 180 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $R/run229-gpu-tests-$i.log 2>&1 & done; wait
echo "gpu tests $(( $(date +%s) - t0 )) s"; cat $R/run229-gpu-tests-*.log | grep -E "^\[  (PASSED|FAILED) |^\[  FAILED"; gzip -f $R/run229-gpu-tests-*.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
v() { case $1 in t1) echo "$C/grape 1";; t2) echo "$C/grape 2";; esac; }
for x in t1 t2; do
  set -- $(v $x)
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_TMA=$2 GRAPE_CACHE_DIR=$D/t$x GRAPE_KERNEL_TIMELINE=$R/run229-timeline-$x.txt $1 bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 5 --iters 30 > /dev/null 2>&1
  echo "== $x"; python3 scripts/timeline_summary.py $R/run229-timeline-$x.txt
done | tee $R/run229-marks.txt
for round in 1 2; do
  for x in t1 t2; do
    set -- $(v $x)
    GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_TMA=$2 GRAPE_CACHE_DIR=$D/k$x $1 bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run229-decode.txt
for x in t1 t2; do
  set -- $(v $x)
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_TMA=$2 GRAPE_CACHE_DIR=$D/k$x timeout 90 $1 bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry beam_search --input prompt=$D/prompt.npy 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  GRAPE_COMPILE_WORKER=$1 GRAPE_GEMV_TMA=$2 GRAPE_CACHE_DIR=$D/k$x timeout 90 $1 bench examples/gpt2.grp "${ARGS[@]}" --warmup 2 --iters 10 --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run229-decode.txt
for f in $R/run229-timeline-*.txt; do gzip -f $f; done
echo "total $(( $(date +%s) - t0 )) s"
