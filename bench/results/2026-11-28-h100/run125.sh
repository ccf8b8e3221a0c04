#!/usr/bin/env bash
# GPU run 125: block-sequence steps made cheaper — each kernel's parameter block prefetched into L1
# at the sequence's start (grape), and the warp-per-row normalisations taking two rows of a warp
# at once (grape-rows has only this; grape-base neither; same tree otherwise: sequences compiled
# lazily at the binding). The new GPU tests first; the overhead chain (graph default / all,
# eager) per binary with its PyTorch peer; generate and beam_search graph default / all; eager
# profiles; the cold build of every gpt2.grp kernel on 16 cores; compute-sanitizer over the
# sequence tests; then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD GRAPE_CACHE_DIR=/tmp/gc
B=build-carry; R=$OUT; D=/tmp/in; mkdir -p $R $D
nvidia-smi -L
t0=$(date +%s)
$B/grape_gpu_tests --gtest_color=no --gtest_filter='BlockSequences.*:KernelProfile.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which|actual" | head -30
(F='BlockSequences.*'; for tool in memcheck racecheck; do GRAPE_CACHE_DIR=/tmp/gcs timeout 300 compute-sanitizer --tool $tool $B/grape_gpu_tests --gtest_filter="$F" --gtest_color=no > /tmp/san-$tool.log 2>&1; echo "sanitizer $tool rc=$?"; done) > /tmp/san.txt 2>&1 &
SAN=$!
python3 -c "import numpy as np; np.save('$D/x_overhead.npy', np.random.default_rng(1).standard_normal((8, 64)).astype(np.float32))"
OVH=(bench/overhead/overhead.grp --input x=$D/x_overhead.npy --backend cuda)
python3 bench/decode/make_inputs.py $D > /dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/beam_prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
BEAM=(examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors --input prompt=$D/beam_prompt.npy --backend cuda)
GEN=(examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda)
b() { echo -n "$1: "; shift; env "$@" | grep -E "latency|kernels per" | tr '\n' ' '; echo; }
for r in 1 2; do
  for bin in grape-base grape-rows grape; do
    b "r$r $bin overhead graph" $B/$bin bench "${OVH[@]}" --executor graph --warmup 20 --iters 200
    b "r$r $bin overhead graph all" GRAPE_GRAPH_SEQUENCES=all $B/$bin bench "${OVH[@]}" --executor graph --warmup 20 --iters 200
    b "r$r $bin overhead eager" $B/$bin bench "${OVH[@]}" --executor eager --warmup 20 --iters 200
  done
  b "r$r grape-base generate graph" $B/grape-base bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape generate graph" $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape generate graph all" GRAPE_GRAPH_SEQUENCES=all $B/grape bench "${GEN[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape-base beam graph" $B/grape-base bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape beam graph" $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
  b "r$r grape beam graph all" GRAPE_GRAPH_SEQUENCES=all $B/grape bench "${BEAM[@]}" --executor graph --warmup 2 --iters 6
done
$B/grape bench "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -40 > $R/run125-beam-profile.txt
$B/grape bench "${GEN[@]}" --executor eager --warmup 1 --iters 3 --profile 2>&1 | head -40 > $R/run125-generate-profile.txt
python3 bench/overhead/peer_torch.py $D/x_overhead.npy 100 /tmp/torch_ovh.npy /tmp/torch_ovh.json > /dev/null 2>&1; python3 -c "import json; d=json.load(open('/tmp/torch_ovh.json')); print('torch overhead eager', d['eager']['median_ms'], 'graph', d['cuda_graph']['median_ms'])"
echo "bench $(( $(date +%s) - t0 )) s"
wait $SAN; cat /tmp/san.txt; for t in memcheck racecheck; do tail -3 /tmp/san-$t.log; grep -E "^\[  (PASSED|FAILED)" /tmp/san-$t.log; done
TIMEFORMAT='cold build: %R s'
for s in 1 0; do echo "GRAPE_SEQUENCES=$s"; time (GRAPE_SEQUENCES=$s GRAPE_CACHE_DIR=/tmp/cold$s $B/grape compile examples/gpt2.grp --arch sm_90 | tail -1); done
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gct-$i timeout 280 $B/grape_gpu_tests --gtest_color=no > /tmp/gt$i.log 2>&1 &
done
wait
cat /tmp/gt*.log > /tmp/gpu-tests.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" /tmp/gpu-tests.log; grep -B2 -A12 "Failure" /tmp/gpu-tests.log | head -40
grep -E "^\[  (PASSED|FAILED|SKIPPED) " /tmp/gpu-tests.log > $R/run125-gpu-tests-summary.txt
echo "total $(( $(date +%s) - t0 )) s"
