#!/usr/bin/env bash
# GPU run 249: both decode probes after their mbarrier, bulk-copy and counter helpers moved into
# scripts/probes/probe_sync.cuh (and run 248's reference step, checks and random data into
# scripts/probes/decode_reference.cuh (review clean-up): their checks must pass as before
# (decode_megakernel's logits rel. L2 9.709e-04 exactly: the same data and reference).
cd "$(dirname "$0")/../../.."
C=$PWD/build-carry
R=$OUT
nvidia-smi -L
timeout 40 $C/decode_megakernel 50 2>&1 | tee $R/mk16.txt | grep -E "check|producer warp: " | head -4
MK_PACE=250 MK_LM_L2=4 MK_EXTRA=1 timeout 40 $C/decode_two_stage 50 2>&1 | tee $R/ts19.txt | grep -E "check \(first|check \(seventh|pace 250 ns, lm_head items in L2 4: "
