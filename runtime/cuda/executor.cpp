#include "runtime/cuda/executor.h"

#include "base/error.h"
#include "runtime/cuda/auto_executor.h"
#include "runtime/cuda/device_program.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/cuda/mono_executor.h"
#include "scheduler/launch.h"

namespace grape::cuda {

void Executor::set_profiling(bool) {
  throw Error(ErrorCode::Unsupported,
              std::string("kernel profiles are measured by the eager executor; this session runs the ") +
                  name() + " executor");
}

ProfileReport Executor::profile() const { return {}; }

bool programmatic_launch(const jit::Device& device, const char* knob) {
  return scheduler::env_knob(knob, 0, 1, 1) == 1 && device.cc_major() >= 9;
}

std::unique_ptr<Executor> make_executor(const std::string& kind, const ir::Function& f,
                                        const std::map<std::string, Tensor>& weights, int device,
                                        const RunControl& control,
                                        std::function<SourcePosition(const Span&)> locate,
                                        const GraphOptions& graph) {
  if (kind != "auto" && kind != "eager" && kind != "graph" && kind != "mono")
    throw Error(
        ErrorCode::Unsupported,
        "executor \"" + kind + "\" is not implemented yet; use \"eager\", \"graph\", \"mono\" or \"auto\"");
  if (kind == "graph" && !jit::driver().has_graphs())
    throw Error(ErrorCode::Unsupported,
                "executor \"graph\" needs CUDA graphs with conditional nodes (a CUDA 12.4 or "
                "newer driver); the driver " +
                    jit::driver().library_path + " lacks " + jit::driver().missing_graph_symbol);
  auto program = std::make_shared<DeviceProgram>(f, weights, device);
  program->set_locator(std::move(locate));
  program->set_buckets(graph.buckets);
  if (kind == "graph") return std::make_unique<GraphExecutor>(std::move(program), control, graph);
  if (kind == "auto") return std::make_unique<AutoExecutor>(std::move(program), control, graph);
  if (kind == "mono") return std::make_unique<MonoExecutor>(std::move(program), control);
  return std::make_unique<EagerExecutor>(std::move(program), control);
}

}  // namespace grape::cuda
