#!/usr/bin/env bash
# GPU run 180: a loop's initial value is copied under the predicate of the op that computes it, and
# fills are never predicated (initcheck's finding in run 179). initcheck over everything on the
# eager executor again; beam_search and generate outputs and graph times against the commit before
# (grape-old = 87cdf71, its kernel cache apart); then the whole GPU suite.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
S=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
t0=$(date +%s)
GRAPE_CACHE_DIR=/tmp/gs timeout 150 python3 scripts/gpu_sanitize.py --grape $C/grape --out $R/san-init --sanitizer $S --tools initcheck \
  --executors eager --jobs 8 > $R/run180-sanitize-initcheck.log 2>&1
echo "initcheck rc=$? $(( $(date +%s) - t0 )) s"; tail -4 $R/run180-sanitize-initcheck.log
cp $R/san-init/summary.txt $R/run180-summary-init.txt; rm -rf $R/san-init
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda --executor graph)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
for g in grape-old grape; do
  GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --output $D/beam-$g > /dev/null
  GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --output $D/gen-$g > /dev/null
done
python3 -c "
import numpy as np
for e in ('beam', 'gen'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-grape-old/%s.npy' % (e, o))
    except Exception: continue
    b = np.load('$D/%s-grape/%s.npy' % (e, o)); print(e, o, 'identical to the commit before:', a.shape == b.shape and (a == b).all())"
for round in 1 2; do
  for g in grape-old grape; do
    GRAPE_TUNE=0 GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --warmup 2 --iters 10 2>&1 | grep -E "latency|kernels per" | tr '\n' ' ' | sed "s/^/beam_search $g round $round: /"; echo
  done
done
echo "benches $(( $(date +%s) - t0 )) s"
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 400 $C/grape_gpu_tests --gtest_color=no > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run180-gpu-tests.log
echo "suite $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run180-gpu-tests.log
grep -B2 -A12 "Failure" $R/run180-gpu-tests.log | head -40
