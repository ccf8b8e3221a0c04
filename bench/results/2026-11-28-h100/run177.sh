#!/usr/bin/env bash
# GPU run 177: block sequences give steps of at most 32 items to warp 0 alone (inlined bodies,
# __syncwarp between them, one block barrier per run). One binary, GRAPE_SEQUENCE_WARP=0 / call /
# on (default), one kernel cache (same tuning decisions): beam_search and generate outputs
# compared, graph times alternating, the eager profile's sequence lines; then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
export GRAPE_COMPILE_WORKER=$C/grape GRAPE_CACHE_DIR=$D/kc
t0=$(date +%s)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
for m in 0 call on; do
  GRAPE_SEQUENCE_WARP=$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$m > /dev/null
  GRAPE_SEQUENCE_WARP=$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --output $D/beame-$m > /dev/null
  GRAPE_SEQUENCE_WARP=$m $C/grape run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --output $D/gen-$m > /dev/null
done
echo "built + ran $(( $(date +%s) - t0 )) s"
python3 -c "
import numpy as np
for e in ('beam', 'beame', 'gen'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-0/%s.npy' % (e, o))
    except Exception: continue
    for m in ('call', 'on'):
      b = np.load('$D/%s-%s/%s.npy' % (e, m, o)); print(e, o, m, 'identical to off:', a.shape == b.shape and (a == b).all())"
for round in 1 2; do
  for m in 0 call on; do
    GRAPE_SEQUENCE_WARP=$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search warp=$m round $round: /"
    GRAPE_SEQUENCE_WARP=$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate warp=$m round $round: /"
  done
done
for m in 0 on; do
  GRAPE_SEQUENCE_WARP=$m $C/grape bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile > $R/run177-profile-$m.txt 2>&1
  grep -m6 "block sequence" $R/run177-profile-$m.txt | sed "s/^/eager profile warp=$m: /"
done
echo "benches $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 330 $C/grape_gpu_tests --gtest_color=no > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run177-gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run177-gpu-tests.log
grep -B2 -A12 "Failure" $R/run177-gpu-tests.log | head -40
