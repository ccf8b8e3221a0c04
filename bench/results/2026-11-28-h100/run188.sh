#!/usr/bin/env bash
# GPU run 188: top-k merges by warp (each warp its best k by shuffles, then warp 0 over the warps' lists; one barrier) (grape) against
# the commit before (grape-old, with run 187's attention change): beam_search and generate graph times alternating, outputs
# compared, the eager profile's top-k line; the top-k, row, GPT-2 and control-flow GPU tests.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
export GRAPE_COMPILE_WORKER=$C/grape
t0=$(date +%s)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; r=np.random.default_rng(3); np.save('$D/prompt.npy', r.integers(0, 50000, (1, 64)).astype(np.int32)); np.save('$D/gen_prompt.npy', r.integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32))"
ARGS=(--weights $D/gpt2.safetensors --backend cuda)
DEC=(--entry decode_step --input tok=$D/tok.npy --input p=$D/p.npy)
BEAM=(--entry beam_search --input prompt=$D/prompt.npy)
GEN=(--entry generate --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy)
export GRAPE_TUNE=0
$C/grape run examples/gpt2.grp --weights $D/gpt2.safetensors --backend cpu "${DEC[@]}" --output $D/dec-cpu > /dev/null
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${DEC[@]}" --executor graph --output $D/dec-$g > /dev/null
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --output $D/beam-$g > /dev/null
  GRAPE_CACHE_DIR=$D/k-$g $C/$g run examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --output $D/gen-$g > /dev/null
done
python3 -c "
import numpy as np
a = np.load('$D/dec-grape-old/out0.npy').astype(np.float32); b = np.load('$D/dec-grape/out0.npy').astype(np.float32)
c = np.load('$D/dec-cpu/out0.npy').astype(np.float32)
for n, x in (('head', a), ('new', b)): print('decode_step logits', n, 'vs cpu: max abs', float(np.abs(x - c).max()), 'argmax equal', (x.argmax(-1) == c.argmax(-1)).all())
for e in ('beam', 'gen'):
  for o in ('out0', 'out1'):
    try: a = np.load('$D/%s-grape-old/%s.npy' % (e, o))
    except Exception: continue
    b = np.load('$D/%s-grape/%s.npy' % (e, o)); print(e, o, 'equal to the head:', a.shape == b.shape and (a == b).all(), int((a != b).sum()), 'differ')"
for g in grape-old grape; do
  GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor eager --warmup 1 --iters 3 --profile > $R/run188-profile-$g.txt 2>&1
  grep -m2 "_topk" $R/run188-profile-$g.txt | sed "s/^/eager profile $g: /"
done
for round in 1 2; do
  for g in grape-old grape; do
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${BEAM[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/beam_search $g round $round: /"
    GRAPE_CACHE_DIR=$D/k-$g $C/$g bench examples/gpt2.grp "${ARGS[@]}" "${GEN[@]}" --executor graph --warmup 2 --iters 10 2>&1 | grep latency | sed "s/^/generate $g round $round: /"
  done
done
unset GRAPE_TUNE
echo "benches $(( $(date +%s) - t0 )) s"
F='GpuParity.TopK:GpuParity.RowAndSliceTemplates:GpuParity.ControlFlowCases:GpuParity.Gpt2*:BlockSequences.*:GraphExecutor.*'
for i in 0 1 2 3; do
  GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i GRAPE_CACHE_DIR=/tmp/gt timeout 200 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$F" > $D/gt$i.log 2>&1 &
done
wait
cat $D/gt*.log > $R/run188-gpu-tests.log
echo "tests $(( $(date +%s) - t0 )) s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED" $R/run188-gpu-tests.log
grep -B2 -A10 "Failure" $R/run188-gpu-tests.log | head -30
gzip -f $R/run188-gpu-tests.log
echo "total $(( $(date +%s) - t0 )) s"
