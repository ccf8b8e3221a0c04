#!/usr/bin/env bash
# GPU run 149: why a decode product runs ~2x slower inside the persistent kernel than as its own
# kernel (run 148's trace). (1) decode_step graph / mono / mono with weights through the read-only
# path (GRAPE_MONO_NC=1), alternating, with traces; (2) bench/decode/gemv.grp (c_fc, c_proj at batch
# 5): ncu sections of the eager kernel and of the persistent kernel, same inputs.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
B=$C/grape
R=$OUT
nvidia-smi -L
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
export GRAPE_COMPILE_WORKER=$B
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B run "${DEC[@]}" --executor graph --output $D/og > /dev/null
$B run "${DEC[@]}" --executor mono --output $D/om > /dev/null
GRAPE_MONO_NC=1 $B run "${DEC[@]}" --executor mono --output $D/on > /dev/null
python3 -c "
import numpy as np
a=np.load('$D/og/out0.npy'); b=np.load('$D/om/out0.npy'); c=np.load('$D/on/out0.npy')
print('decode_step mono vs graph identical:', (a==b).all(), ' mono-nc vs graph identical:', (a==c).all())"
for round in 1 2; do
  for v in graph mono mono-nc; do
    case $v in graph) env=(); ex=graph;; mono) env=(); ex=mono;; mono-nc) env=(GRAPE_MONO_NC=1); ex=mono;; esac
    env "${env[@]}" $B bench "${DEC[@]}" --executor $ex --warmup 20 --iters 300 2>&1 | grep -E "latency" | sed "s/^/decode_step $v round $round: /"
  done
done
GRAPE_MONO_TRACE=$R/trace-mono.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
GRAPE_MONO_NC=1 GRAPE_MONO_TRACE=$R/trace-nc.txt $B bench "${DEC[@]}" --executor mono --warmup 5 --iters 20 >/dev/null 2>&1
head -9 $R/trace-mono.txt; tail -1 $R/trace-mono.txt; head -9 $R/trace-nc.txt; tail -1 $R/trace-nc.txt
python3 -c "import numpy as np; r=np.random.default_rng(1); np.save('$D/x768.npy', r.standard_normal((5,768)).astype(np.float16)); np.save('$D/x3072.npy', r.standard_normal((5,3072)).astype(np.float16))"
SECT="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
for e in c_fc c_proj; do
  x=$D/x768.npy; [ $e = c_proj ] && x=$D/x3072.npy
  G=(bench/decode/gemv.grp --entry $e --random-weights 3 --input x=$x --backend cuda)
  $B run "${G[@]}" --executor eager --output $D/g-$e-e >/dev/null; $B run "${G[@]}" --executor mono --output $D/g-$e-m > /dev/null
  python3 -c "import numpy as np; print('$e eager vs mono identical:', (np.load('$D/g-$e-e/out0.npy')==np.load('$D/g-$e-m/out0.npy')).all())"
  ncu $SECT -k grape_kernel -c 1 $B run "${G[@]}" --executor eager --output $D/o1 > $R/ncu-$e-eager.txt 2>&1
  ncu $SECT -k grape_persistent -c 1 $B run "${G[@]}" --executor mono --output $D/o2 > $R/ncu-$e-mono.txt 2>&1
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Grid Size|Dynamic Shared|Warp Cycles Per Issued" $R/ncu-$e-eager.txt | sed "s/^/$e eager: /"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Grid Size|Dynamic Shared|Warp Cycles Per Issued" $R/ncu-$e-mono.txt | sed "s/^/$e mono: /"
done
