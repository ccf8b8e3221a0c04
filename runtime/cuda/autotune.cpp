#include "runtime/cuda/autotune.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "base/error.h"

namespace grape::cuda {

bool tuning_enabled() {
  static const bool on = scheduler::env_knob("GRAPE_TUNE", 0, 1, 1) == 1;
  return on;
}

std::string tuning_forced_choice() {
  const char* v = std::getenv("GRAPE_TUNE_FORCE");
  return v ? v : "";
}

jit::Hash128 tuning_key(const std::string& kernel_source,
                        const std::vector<scheduler::LaunchCandidate>& candidates,
                        const std::vector<int64_t>& bucket_sizes, const std::string& device_name,
                        const std::string& arch, int sm_count) {
  jit::FieldHasher h;
  h.field("grape-tune 1").field(kernel_source);
  h.field(candidates.size());
  for (const scheduler::LaunchCandidate& c : candidates) h.field(c.name);
  h.field(bucket_sizes.size());
  for (int64_t v : bucket_sizes) h.field(static_cast<uint64_t>(v));
  h.field(device_name).field(arch).field(static_cast<uint64_t>(sm_count));
  return h.digest();
}

size_t pick_fastest(const std::vector<double>& us) {
  if (us.empty()) return 0;
  size_t best = 0;
  for (size_t i = 1; i < us.size(); ++i)
    if (us[i] < us[best]) best = i;
  // The heuristic's choice stays unless the winner beats it clearly (and it ran at all).
  if (best != 0 && us[0] < std::numeric_limits<double>::infinity() && us[best] * (1 + kTuneMinGain) >= us[0])
    return 0;
  return best;
}

std::vector<double> time_launches(const jit::Device& device, CUstream stream,
                                  const std::vector<TimedLaunch>& launches, jit::KParams params,
                                  const std::string& what) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> us(launches.size(), inf);
  std::vector<bool> usable(launches.size(), true);
  auto launch = [&](size_t i) {
    const TimedLaunch& l = launches[i];
    params.splits = l.dims.splits;
    params.kchunk = l.dims.kchunk;
    void* args[] = {&params};  // by value: the driver copies it at the call
    const CUresult r =
        jit::try_launch(l.function, jit::Dim3{l.dims.grid, 1, 1}, jit::Dim3{l.dims.block, 1, 1},
                        l.dims.shared_bytes, stream, args, false, static_cast<unsigned>(l.dims.cluster));
    // Refused at launch (resources, shared memory): not a candidate here. Errors of the kernel
    // itself surface at the synchronisation below, as errors.
    if (r == CUDA_ERROR_INVALID_VALUE || r == CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES ||
        r == CUDA_ERROR_INVALID_CLUSTER_SIZE || r == CUDA_ERROR_NOT_SUPPORTED)
      return false;
    jit::check(r, l.dims.cluster > 1 ? "cuLaunchKernelEx" : "cuLaunchKernel", what + " (tuning)");
    return true;
  };
  for (size_t i = 0; i < launches.size(); ++i) usable[i] = launches[i].function && launch(i);
  jit::Event start(device), stop(device);
  for (int round = 0; round < kTuneRounds; ++round) {
    for (size_t i = 0; i < launches.size(); ++i) {
      if (!usable[i]) continue;
      start.record(stream);
      for (int n = 0; n < kTuneLaunches; ++n) launch(i);
      stop.record(stream);
      stop.synchronize();
      us[i] = std::min(us[i], 1000.0 * stop.elapsed_ms_since(start) / kTuneLaunches);
    }
  }
  return us;
}

}  // namespace grape::cuda
