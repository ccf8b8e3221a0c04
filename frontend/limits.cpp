#include "frontend/limits.h"

#include <algorithm>

namespace grape {

bool set_limit(CompileLimits& limits, const std::string& name, int64_t value) {
  if (name == "max_ops")
    limits.max_ops = value;
  else if (name == "max_unrolled_iterations")
    limits.max_unrolled_iterations = value;
  else if (name == "max_call_depth")
    limits.max_call_depth = static_cast<int>(std::min<int64_t>(value, 1 << 20));
  else if (name == "max_weights")
    limits.max_weights = value;
  else if (name == "max_tensor_elements")
    limits.max_tensor_elements = value;
  else if (name == "max_program_elements")
    limits.max_program_elements = value;
  else if (name == "max_loop_trips")
    limits.max_loop_trips = value;
  else
    return false;
  return true;
}

const char* limit_names() {
  return "max_ops, max_unrolled_iterations, max_call_depth, max_weights, max_tensor_elements, "
         "max_program_elements, max_loop_trips";
}

}  // namespace grape
