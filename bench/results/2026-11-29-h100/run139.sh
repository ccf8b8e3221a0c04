#!/usr/bin/env bash
# GPU run 139 (one H100, fresh machine): (1) the cold build of every gpt2.grp kernel with NVRTC's
# automatic precompiled header off (the new default on > 4 hardware threads) against on, truly
# cold each time, alternating (scripts/probes/cold_build_ab.sh); (2) where decode_step's and
# beam_search's time goes now: grape bench --profile (eager, CUDA events per kernel) and graph times.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=$PWD/build-carry/grape
R=$OUT
nvidia-smi -L; nproc
scripts/probes/cold_build_ab.sh $B $R/ab GRAPE_NVRTC_PCH=0 GRAPE_NVRTC_PCH=1 2>&1 | tee $R/cold_build_ab.txt
(cd $R && tar czf ab-traces.tgz ab && rm -rf ab)
D=$(mktemp -d)
python3 bench/decode/make_inputs.py $D >/dev/null
export GRAPE_CACHE_DIR=$D/kc
DEC=(examples/gpt2.grp --entry decode_step --weights $D/gpt2.safetensors --input tok=$D/tok.npy --input p=$D/p.npy --backend cuda)
$B bench "${DEC[@]}" --executor graph --warmup 20 --iters 300 2>&1 | tail -8
$B bench "${DEC[@]}" --executor eager --warmup 20 --iters 100 --profile > $R/profile_decode.txt 2>&1
head -40 $R/profile_decode.txt
python3 bench/beam/bench_beam.py --grape $B --out $D/beam 2>&1 | tail -14
