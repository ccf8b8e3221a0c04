// Launch geometry of a generated kernel for the current symbol bindings (see jit/kernel_spec.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "jit/kernel_spec.h"

namespace grape::scheduler {

struct LaunchDims {
  unsigned grid = 1;   // blocks (x only)
  unsigned block = 1;  // threads per block (x only)
};

// Evaluates the rule's dims with `dims` (symbol -> value). The grid is capped (kernels grid-stride),
// and at least 1 even for empty work (the kernel then exits at once).
LaunchDims launch_dims(const jit::LaunchRule& rule, const std::map<std::string, int64_t>& dims);

constexpr int64_t kMaxGrid = 65535;

}  // namespace grape::scheduler
