// The compiler's resource limits (kept apart from compile.h so that runtime/model.h can offer them
// without the IR and AST headers).
#pragma once
#include <cstdint>
#include <string>

namespace grape {

// Resource limits, checked while the program is built so that no input can make the compiler run
// for minutes or exhaust memory. Each error names the limit (docs/language.md, "Limits").
struct CompileLimits {
  // Operations emitted while lowering (after inlining and unrolling, all entries together).
  int64_t max_ops = 500'000;
  // Iterations of statically unrolled `for` loops, all loops of all entries together.
  int64_t max_unrolled_iterations = 65'536;
  // Nesting depth of inlined calls.
  int max_call_depth = 64;
  // Weights, counting every instance of a weight group (h[12] { w } is 12 weights plus the group).
  int64_t max_weights = 100'000;
  // Elements of one tensor with a static shape (weights, states, literals like zeros(f32[N])).
  int64_t max_tensor_elements = int64_t{1} << 32;
  // Elements of all tensors of static shape together: weights (every instance of a group), states,
  // and the results of the operations emitted while lowering (all entries together).
  int64_t max_program_elements = int64_t{1} << 36;
  // The largest `max N` of a while loop (the ceiling of an explicit bound). Loops without `max`
  // stop at the session's trip cap instead (runtime/run_control.h).
  int64_t max_loop_trips = 100'000'000;
};

// Sets the limit called `name` (a field name above, "max_ops" ...) to `value` (>= 0; a call depth
// is capped at 2^20). False for an unknown name.
bool set_limit(CompileLimits& limits, const std::string& name, int64_t value);
// Every limit's name, comma-separated (for messages).
const char* limit_names();

}  // namespace grape
