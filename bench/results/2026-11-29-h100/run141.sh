#!/usr/bin/env bash
# GPU run 141 (one H100): the cold build of every gpt2.grp kernel with NVRTC compile worker
# processes (the default of the grape command now) against threads of one process
# (GRAPE_COMPILE_PROCESSES=0), truly cold, alternating, two rounds; the same for --bundle (the
# wide variants too) once each; racecheck of the gtest that exited 11 in the twenty-second
# session, with grape_loop_next excluded as the sweep does; then the whole GPU suite, its
# builds through worker processes of build-carry/grape (GRAPE_COMPILE_WORKER).
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
B=$PWD/build-carry/grape
R=$OUT
nproc
scripts/probes/cold_build_ab.sh $B $R/ab GRAPE_COMPILE_PROCESSES=1 GRAPE_COMPILE_PROCESSES=0 2>&1 | tee $R/cold_build_ab.txt
for e in 1 0; do
  d=$(mktemp -d)
  /usr/bin/time -f "--bundle, GRAPE_COMPILE_PROCESSES=$e: %e s wall, %U s user, %S s sys" env GRAPE_COMPILE_PROCESSES=$e \
    CUDA_CACHE_PATH=$d $B compile examples/gpt2.grp --arch sm_90 --bundle $d/b.grpkb 2>&1 | tail -1
  ls -la $d/b.grpkb | awk '{print "  bundle bytes", $5}'; md5sum $d/b.grpkb
done
(cd $R && tar czf ab-traces.tgz ab && rm -rf ab)
S=$(ls -d /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)
export GRAPE_CACHE_DIR=/tmp/grape-cache
build-carry/grape_gpu_tests --gtest_filter='BlockSequences.BeamSearchMatchesTheCpuWithFewerLaunches' 2>&1 | tail -2
timeout 200 $S --tool racecheck --kernel-name-exclude kne=grape_loop_next build-carry/grape_gpu_tests \
  --gtest_filter='BlockSequences.BeamSearchMatchesTheCpuWithFewerLaunches' > $R/racecheck.log 2>&1
echo "racecheck exit $?"; tail -5 $R/racecheck.log
export GRAPE_COMPILE_WORKER=$B
rm -rf /tmp/grape-cache
GRAPE_SKIP_BENCH=1 OUT=$R scripts/gpu-check.sh run 2>&1 | tail -8
