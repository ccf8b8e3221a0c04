#include "runtime/cuda/executor.h"

#include <cstdlib>

#include "runtime/cuda/device_program.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/error.h"

namespace grape::cuda {

int64_t loop_trip_cap() {
  const char* env = std::getenv("GRAPE_LOOP_TRIP_CAP");
  if (!env || !*env) return kDefaultLoopTripCap;
  char* end = nullptr;
  long long v = std::strtoll(env, &end, 10);
  if (*end != 0 || v <= 0)
    throw Error(ErrorCode::InvalidArgument,
                std::string("GRAPE_LOOP_TRIP_CAP must be a positive integer, got '") + env + "'");
  return v;
}

std::unique_ptr<Executor> make_executor(const std::string& kind, const ir::Function& f,
                                        const std::map<std::string, Tensor>& weights, int device) {
  if (kind != "auto" && kind != "eager" && kind != "graph")
    throw Error(ErrorCode::Unsupported,
                "executor \"" + kind + "\" is not implemented yet; use \"eager\", \"graph\" or \"auto\"");
  if (kind == "graph" && !jit::driver().has_graphs())
    throw Error(ErrorCode::Unsupported,
                "executor \"graph\" needs CUDA graphs with conditional nodes (a CUDA 12.4 or "
                "newer driver); the driver " +
                    jit::driver().library_path + " lacks " + jit::driver().missing_graph_symbol);
  auto program = std::make_shared<DeviceProgram>(f, weights, device);
  if (kind == "graph") return std::make_unique<GraphExecutor>(std::move(program));
  return std::make_unique<EagerExecutor>(std::move(program));
}

}  // namespace grape::cuda
