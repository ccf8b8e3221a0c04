#!/usr/bin/env bash
# GPU run 256 (thirty-eighth session): the 10 GPU tests of shard 4 that run 255's 330 s shard
# timeout cut off (attention shapes, device inputs, executors), in 3 processes.
cd "$(dirname "$0")/../../.."
export GRAPE_SOURCE_DIR=$PWD
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
export GRAPE_COMPILE_WORKER=$C/grape
F1='Shapes/GpuAttention.MatchesCpu/case0:Shapes/GpuAttention.MatchesCpu/case4:Shapes/GpuAttention.MatchesCpu/case8:Shapes/GpuAttention.MatchesCpu/case12:Shapes/GpuAttention.MatchesCpu/case16'
F2='Executors/DeviceInputs.AreReadInPlaceAndANewPointerKeepsTheGraph/eager:Executors/DeviceInputs.SessionDeviceBuffersAndTheCallersStream/eager:Plan/Executors.Mlp/0'
F3='Plan/Executors.Bert/0:Plan/Executors.Gpt2GenerateChangingShapes/0'
i=0
for f in "$F1" "$F2" "$F3"; do
  i=$((i + 1))
  GRAPE_CACHE_DIR=/tmp/g$i timeout 400 $C/grape_gpu_tests --gtest_color=no --gtest_filter="$f" > $R/run256-$i.log 2>&1 &
done
wait
cat $R/run256-[123].log > $R/run256-gpu-tests.log; rm $R/run256-[123].log
grep -E "^\[       OK|^\[  (PASSED|FAILED)" $R/run256-gpu-tests.log
