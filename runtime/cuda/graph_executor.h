// The graph executor: the plan becomes one CUDA graph per (entry, shape bucket), built with the
// explicit graph API (no stream capture) and instantiated once; a run is input copies, one graph
// launch and output copies, with no host synchronisation in between. A call whose dims differ
// from those the bucket's graph was last set up for (or whose parameter blocks or addresses
// changed) rewrites the graph's kernel nodes in place (cuGraphExecKernelNodeSetParams: grid,
// shared memory, function, parameter block) instead of instantiating another graph; the graph's
// topology is the plan's and never depends on the dims (docs/execution.md, "Shape buckets"). A device loop is
// a conditional WHILE node: a small kernel before it sets the handle from the initial condition, and the
// body's last node counts the trip and sets the handle from the condition the body computed
// (runtime/cuda/control_kernels.h). Kernels read everything through their parameter blocks, so a
// new input, state value or bound dim changes only the blocks, never the graph.
#pragma once
#include <memory>

#include "runtime/cuda/executor.h"

namespace grape::cuda {

class DeviceProgram;

class GraphExecutor : public Executor {
 public:
  // Throws Error(Unsupported) when the driver lacks the graph API with conditional nodes.
  GraphExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control,
                const GraphOptions& options = {});
  ~GraphExecutor() override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::map<std::string, int64_t>& dims) override;
  const char* name() const override { return "graph"; }

  // Instantiated graphs kept at most, whatever their memory (least recently used evicted first).
  static constexpr size_t kMaxGraphs = 64;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::cuda
