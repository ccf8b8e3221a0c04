#!/usr/bin/env bash
# GPU run 126: block sequences keep storages that live only inside them in shared memory, with
# their kernels' parameter blocks staged there (grape; GRAPE_SEQUENCE_LOCALS=0: blocks staged,
# every storage global), and the graph makes straight sequences of >= 8 kernels one node
# (GRAPE_GRAPH_SEQUENCES=loops: the previous rule). grape-base: 8c3f550, the tree before (
# sequences named by ops, two rows per warp inside sequences). The sequence tests; overhead,
# generate and beam_search A/B; eager profile; the cold build of every gpt2.grp kernel.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='BlockSequences.*:KernelProfile.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -30
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
OVH=(bench/overhead/overhead.grp --input x=$D/x_overhead.npy --backend cuda)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda)
b() { echo -n "$1: "; shift; env "$@" | grep -E "latency|kernels per" | tr '\n' ' '; echo; }
$B/grape run "${OVH[@]}" --output /tmp/ovh_grape > /dev/null && GRAPE_SEQUENCES=0 $B/grape run "${OVH[@]}" --output /tmp/ovh_noseq > /dev/null && python3 -c "import numpy as np; a=np.load('/tmp/ovh_grape/out0.npy'); b=np.load('/tmp/ovh_noseq/out0.npy'); print('overhead out vs no sequences: max abs diff', float(abs(a-b).max()))"
for r in 1 2; do
  b "r$r base overhead graph" $B/grape-base bench "${OVH[@]}" --executor graph --warmup 20 --iters 300
  b "r$r grape overhead graph" $B/grape bench "${OVH[@]}" --executor graph --warmup 20 --iters 300
  b "r$r grape overhead graph locals=0" GRAPE_SEQUENCE_LOCALS=0 $B/grape bench "${OVH[@]}" --executor graph --warmup 20 --iters 300
  b "r$r grape overhead graph loops" GRAPE_GRAPH_SEQUENCES=loops $B/grape bench "${OVH[@]}" --executor graph --warmup 20 --iters 300
  b "r$r base overhead eager" $B/grape-base bench "${OVH[@]}" --executor eager --warmup 20 --iters 300
  b "r$r grape overhead eager" $B/grape bench "${OVH[@]}" --executor eager --warmup 20 --iters 300
  b "r$r base generate graph" $B/grape-base bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape generate graph" $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r base beam graph" $B/grape-base bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape beam graph" $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape beam graph locals=0" GRAPE_SEQUENCE_LOCALS=0 $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
done
$B/grape bench "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -16 > $R/run126-beam-profile.txt
head -9 $R/run126-beam-profile.txt | tail -2
python3 bench/overhead/peer_torch.py $D/x_overhead.npy 100 /tmp/torch_ovh.npy /tmp/torch_ovh.json > /dev/null 2>&1; python3 -c "import json; d=json.load(open('/tmp/torch_ovh.json')); print('torch overhead eager', d['eager']['median_ms'], 'graph', d['cuda_graph']['median_ms'])"
python3 -c "import numpy as np; a=np.load('/tmp/ovh_grape/out0.npy'); b=np.load('/tmp/torch_ovh.npy'); print('overhead out vs torch: max abs diff', float(abs(a-b).max()))"
echo "bench $(( $(date +%s) - t0 )) s"
TIMEFORMAT='cold build: %R s'
for s in 1 0; do echo "GRAPE_SEQUENCES=$s"; time (GRAPE_SEQUENCES=$s GRAPE_CACHE_DIR=/tmp/cold$s $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1); done
echo "total $(( $(date +%s) - t0 )) s"
