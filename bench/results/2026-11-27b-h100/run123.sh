#!/usr/bin/env bash
# GPU run 123: block sequences decided at the binding (runtime-sized small kernels, 128-thread
# ones, read-only loads as plain loads). The sequence and control-flow GPU tests first; the
# overhead chain (100 softmax kernels on 8 rows) with sequences on and off, graph and eager, and
# its PyTorch peer; beam_search and generate graph; then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='BlockSequences.*:Executors/*.ControlFlowCases:GpuParity.ControlFlowCases:GraphExecutor.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual|TIMING" | head -40
echo "tests $(( $(date +%s) - t0 )) s"
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
OVH=(bench/overhead/overhead.grp --input x=$D/x_overhead.npy --backend cuda)
for r in 1 2; do
  for s in 1 0; do
    for ex in graph eager; do
      echo -n "r$r seq=$s overhead $ex: "; GRAPE_SEQUENCES=$s $B/grape bench "${OVH[@]}" --executor $ex --warmup 20 --iters 200 2>&1 | grep -E "latency|kernels" | tr '\n' ' '; echo
    done
  done
done
$B/grape run "${OVH[@]}" --output /tmp/ovh_out > /dev/null 2>&1
python3 bench/overhead/peer_torch.py $D/x_overhead.npy 100 /tmp/torch_ovh.npy /tmp/torch_ovh.json > /dev/null 2>&1; cat /tmp/torch_ovh.json; echo
python3 -c "
import numpy as np, glob
a = np.load(sorted(glob.glob('/tmp/ovh_out/*.npy'))[0]); b = np.load('/tmp/torch_ovh.npy')
print('overhead output vs PyTorch rel L2', float(np.linalg.norm(a - b) / np.linalg.norm(b)))"
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda)
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
echo -n "beam graph: "; $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6 2>&1 | grep -E "latency|kernels" | tr '\n' ' '; echo
echo -n "generate graph: "; $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6 2>&1 | grep -E "latency|kernels" | tr '\n' ' '; echo
echo -n "decode_step graph: "; $B/grape bench "${DEC[@]}" --executor graph --warmup 20 --iters 200 2>&1 | grep -E "latency|kernels" | tr '\n' ' '; echo
echo "bench $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 250 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run123-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
