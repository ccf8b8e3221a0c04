// The mono CUDA executor (MonoNN's idea; architecture.md, "Executors"): a whole entry in ONE launch
// of a persistent kernel (jit/persistent_source.h). Every step's kernel body runs inside it, one
// after another, over co-resident blocks (a cooperative launch); a grid-wide barrier separates two
// steps only where the second touches memory the first writes, or writes what it reads (decided
// from the bound addresses, since the arena reuses memory). Copies are done by the grid. There is
// no launch, drain or graph node between steps: what remains per step is its own work and, where
// needed, a barrier.
//
// It runs entries whose plan is a straight list of steps (no device loop: those need the graph
// executor's conditional nodes or a host round trip) whose kernels all have one block size and no
// thread-block clusters. The kernel is generated and compiled at the first run of a binding whose
// launches differ (the bound entry points and barriers; the kernel cache keeps it across sessions).
// Anything else is ErrorCode::Unsupported with the reason.
#pragma once
#include <memory>

#include "runtime/cuda/executor.h"

namespace grape::cuda {

class MonoExecutor : public Executor {
 public:
  // Throws Unsupported when the entry has a device loop.
  MonoExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control);
  ~MonoExecutor() override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::map<std::string, int64_t>& dims) override;
  const char* name() const override { return "mono"; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::cuda
