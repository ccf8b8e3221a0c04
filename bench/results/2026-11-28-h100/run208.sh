#!/usr/bin/env bash
# GPU run 208 (thirty-third session): gemv_nk_mma.cuh with blocks that take several items (A staged
# once, weight loads running ahead across items, 6 steps in flight) against GRAPE_GEMV_NK_MMA=0 (lm_head
# on the 16 x 128 tensor-core tiles): GPU tests in 4 shards; decode_step graph A/B (off, CG 8 = the
# default, CG 4), beam_search and generate (off, default); lm_head under ncu (off, cg8, cg4, cg8 PF 4).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
t0=$(date +%s)
export GRAPE_COMPILE_WORKER=$C/grape
export GRAPE_CACHE_DIR=/tmp/gt
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i timeout 300 $C/grape_gpu_tests --gtest_color=no --gtest_filter='Paths/GpuMatrixProduct.*:GpuParity.Sibling*:RowVariants.*:GpuParity.Gpt2*:MonoExecutor.*:GpuParity.Bert*' > $R/run208-gpu-tests.$i.log 2>&1 &
done
wait
cat $R/run208-gpu-tests.[0-3].log > $R/run208-gpu-tests.log; rm $R/run208-gpu-tests.[0-3].log
echo "gpu tests $(( $(date +%s) - t0 )) s"
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED" $R/run208-gpu-tests.log
gzip -f $R/run208-gpu-tests.log
export GRAPE_TUNE=0
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
v() { case $1 in off) echo "GRAPE_GEMV_NK_MMA=0 GRAPE_CACHE_DIR=$D/k0";; cg8) echo "GRAPE_CACHE_DIR=$D/k8";; cg4) echo "GRAPE_GEMV_NK_MMA_CG=4 GRAPE_CACHE_DIR=$D/k4";; pf4) echo "GRAPE_GEMV_NK_MMA_PF=4 GRAPE_CACHE_DIR=$D/kp";; esac; }
for x in off cg4 cg8; do env $(v $x) $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/o-$x > /dev/null 2>&1; done
python3 - $D <<'PY'
import numpy as np, sys
d = sys.argv[1]
a = np.load(d + "/o-off/out0.npy").astype(np.float64)
for x in ("cg4", "cg8"):
    b = np.load(d + "/o-%s/out0.npy" % x).astype(np.float64)
    print(x, "logits max |diff| vs off %.4g, argmax equal %s" % (np.abs(a - b).max(), (a.argmax(-1) == b.argmax(-1)).all()))
PY
for round in 1 2 3; do
  for x in off cg4 cg8; do
    env $(v $x) $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | grep latency | sed "s/^/decode_step $x round $round: /"
  done
done | tee $R/run208-decode.txt
for x in off cg8; do
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry beam_search --input prompt=$D/prompt.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $x: /"
  env $(v $x) timeout 60 $C/grape bench examples/gpt2.grp "${ARGS[@]}" --entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate $x: /"
done | tee -a $R/run208-decode.txt
echo "benches $(( $(date +%s) - t0 )) s"
for x in off cg8 cg4 pf4; do
  env $(v $x) timeout 60 ncu --launch-skip 62 --launch-count 1 --metrics gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active \
    $C/grape run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor eager --output $D/n > $D/ncu-$x.txt 2>&1
  echo "== lm_head $x"; grep -E "grape_kernel|duration|dram__bytes|grid_size|registers|warps_active" $D/ncu-$x.txt
done | tee $R/run208-ncu-lm-head.txt
echo "total $(( $(date +%s) - t0 )) s"
