// Autotuning (issue 7 item 6): where a kernel can be launched in several configurations
// (scheduler::launch_candidates: tile shapes, blocks per multiprocessor, K splits, query rows per
// block), each is timed once per (kernel, shape bucket, device) at the first bind that needs it,
// and the fastest is kept in the tuning cache (runtime/cuda/tuning_cache.h). DeviceProgram::bind
// drives it; this file holds the parts that do not need the program: the switches, the key, the
// timing loop and the choice.
//
// Timing has no effect on the run: the kernel's parameter block is copied and every buffer it
// could write or that holds run-time data (arena and state storages) points at zeroed scratch
// memory instead; weights and dim values stay (read only). Zeros also keep gathers in range.
#pragma once
#include <string>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/hash.h"
#include "jit/kernel_abi.h"
#include "scheduler/launch.h"

namespace grape::cuda {

// GRAPE_TUNE=0 turns measuring off (the heuristic's choice, launch_dims, everywhere; entries in
// the cache are not read either); 1, the default, on. Read once; another value is an error.
bool tuning_enabled();
// GRAPE_TUNE_FORCE=<candidate name>: every kernel that has a candidate of that name launches it,
// without measuring or touching the cache (tests run every configuration this way; A/B
// measurements). Empty: none. Read at each bind that tunes, so a test can change it between
// sessions.
std::string tuning_forced_choice();

// The key of one kernel's decision: the tuner's version, the kernel's source, the names of its
// candidates (a new candidate set measures again), the launch rule's sizes at the top of their
// shape buckets (so every shape of a bucket shares the decision), and the device.
jit::Hash128 tuning_key(const std::string& kernel_source,
                        const std::vector<scheduler::LaunchCandidate>& candidates,
                        const std::vector<int64_t>& bucket_sizes, const std::string& device_name,
                        const std::string& arch, int sm_count);

// Which measured candidate to keep: the first (the heuristic's) unless another is faster by more
// than kTuneMinGain (a few percent of timing noise should not flip decisions between machines of
// one kind). A candidate that could not be launched has +infinity.
constexpr double kTuneMinGain = 0.03;
size_t pick_fastest(const std::vector<double>& us);

struct TimedLaunch {
  CUfunction function = nullptr;
  scheduler::LaunchDims dims;
};
// Microseconds per launch of each configuration with parameter block `params` (splits and kchunk
// set per configuration), on `stream`: after one warm-up launch each, kTuneRounds rounds in which
// every configuration in turn runs kTuneLaunches launches between two events; the best round
// counts. Launches the driver refuses get +infinity; any other error throws, naming `what`.
constexpr int kTuneRounds = 3, kTuneLaunches = 5;
std::vector<double> time_launches(const jit::Device& device, CUstream stream,
                                  const std::vector<TimedLaunch>& launches, jit::KParams params,
                                  const std::string& what);

}  // namespace grape::cuda
