// Per-kernel device times of a session's runs (the CUDA eager executor measures them with events
// around each launch; `grape bench --profile`, grp_session_set_profiling).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grape {

// One kernel's launches while profiling was on (CUDA events around each launch).
struct KernelProfile {
  std::string name;   // the generated kernel, e.g. "decode_step_k12_matmul"
  std::string op;     // the op whose result it writes, e.g. "matmul"
  std::string where;  // that op's source position, "file:line:col" ("" when unknown)
  unsigned grid = 0, block = 0;
  int64_t launches = 0;
  double total_ms = 0;          // sum of the launches' device times
  double bytes = 0, flops = 0;  // per launch, at the dims of the last run (runtime/cuda/kernel_cost.h)
};
struct ProfileReport {
  int64_t runs = 0;                    // runs profiled since profiling was turned on
  std::vector<KernelProfile> kernels;  // every kernel launched at least once, in program order
};

}  // namespace grape
