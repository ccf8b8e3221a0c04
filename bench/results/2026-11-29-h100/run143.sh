#!/usr/bin/env bash
# GPU run 143 (one H100): clusters for few long known rows in reductions too (reduce.cuh). Base
# binary 635e253 (one block per row) against the head, alternating: bench/rows/log_softmax.grp and
# bench/rows/argmax.grp under ncu (their outputs compared); generate and beam_search graph times,
# same weights and inputs; then the whole GPU suite (builds through worker processes).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
D=$(mktemp -d)
python3 -c "import numpy as np; r=np.random.default_rng(5); np.save('$D/x.npy', (3*r.standard_normal((5, 50257))).astype(np.float16)); np.save('$D/s.npy', r.standard_normal(5).astype(np.float32)); np.save('$D/xf.npy', r.standard_normal((5, 50257)).astype(np.float32))"
prof() {  # name binary args...
  local name=$1 b=$2; shift 2
  GRAPE_CACHE_DIR=$D/kc-$b $C/$b run "$@" --backend cuda --output $D/$name-$b >/dev/null
  GRAPE_CACHE_DIR=$D/kc-$b ncu --metrics gpu__time_duration.sum,launch__grid_size -c 1 --csv $C/$b run "$@" --backend cuda \
    --output $D/$name-$b 2>/dev/null | grep -E "duration|grid_size" | awk -F'","' '{print $(NF-2)"="$NF}' | tr -d '"' | tr '\n' ' '
}
for round in 1 2; do
  for b in grape-base grape; do
    echo "round $round $b log_softmax: $(prof ls $b bench/rows/log_softmax.grp --input x=$D/x.npy --input s=$D/s.npy)"
    echo "round $round $b argmax: $(prof am $b bench/rows/argmax.grp --input x=$D/xf.npy)"
  done
done
python3 -c "
import numpy as np
for n in ('ls', 'am'):
    a=np.load('$D/'+n+'-grape-base/out0.npy'); b=np.load('$D/'+n+'-grape/out0.npy')
    print(n, 'head vs base: equal' if np.array_equal(a, b) else 'max abs diff %g' % float(np.abs(a.astype(float)-b.astype(float)).max()))"
python3 bench/decode/make_inputs.py $D >/dev/null
python3 -c "import numpy as np; np.save('$D/gen_prompt.npy', np.random.default_rng(3).integers(0, 50000, (5, 64)).astype(np.int32)); np.save('$D/gen_n.npy', np.array(128, np.int32)); np.save('$D/beam_prompt.npy', np.random.default_rng(0).integers(0, 50256, (1, 64)).astype(np.int32))"
for round in 1 2; do
  for b in grape-base grape; do
    echo "round $round $b generate graph: $(GRAPE_CACHE_DIR=$D/kc-$b $C/$b bench examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors \
      --input prompt=$D/gen_prompt.npy --input max_new=$D/gen_n.npy --backend cuda --executor graph --warmup 2 --iters 10 2>&1 | grep latency)"
    echo "round $round $b beam_search graph: $(GRAPE_CACHE_DIR=$D/kc-$b $C/$b bench examples/gpt2.grp --entry beam_search --weights $D/gpt2.safetensors \
      --input prompt=$D/beam_prompt.npy --backend cuda --executor graph --warmup 1 --iters 5 2>&1 | grep latency)"
  done
done
for b in grape-base grape; do
  GRAPE_CACHE_DIR=$D/kc-$b $C/$b run examples/gpt2.grp --entry generate --weights $D/gpt2.safetensors --input prompt=$D/gen_prompt.npy \
    --input max_new=$D/gen_n.npy --backend cuda --output $D/gen-$b >/dev/null
done
cmp $D/gen-grape-base/out0.npy $D/gen-grape/out0.npy && echo "generate tokens: head = base"
export GRAPE_COMPILE_WORKER=$C/grape
rm -rf /tmp/grape-cache
GRAPE_SKIP_BENCH=1 OUT=$R scripts/gpu-check.sh run 2>&1 | tail -8
grep -E "LongRowNormsOverClusters|LongKnownRowReductions|RowAndSliceTemplates|Gpt2" $R/gpu-tests.log | grep -E "OK|FAIL" | head
