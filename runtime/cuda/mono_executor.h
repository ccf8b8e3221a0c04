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
//
// An entry that is exactly a GPT-2-style decode step runs, where its shapes and inputs allow, as
// the decoder plan instead: one kernel of two cluster-partitioned stages a layer
// (runtime/cuda/decoder_plan.h); other runs of it take the general kernel.
#pragma once
#include <memory>
#include <string>

#include "runtime/cuda/executor.h"

namespace grape::cuda {

class DecoderPlan;

class MonoExecutor : public Executor {
 public:
  // Throws Unsupported when the entry has a device loop.
  MonoExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control);
  ~MonoExecutor() override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::map<std::string, int64_t>& dims) override;
  const char* name() const override { return "mono"; }
  // Whether the entry is a decode step the decoder plan runs, and whether a run with these inputs
  // would take it (the first such run of a row count builds its kernel, the very first lays out
  // the weights). A `true` holds for the next run() only, which must have the same inputs and come
  // right after (AutoExecutor's use): it does not check them again.
  bool has_decoder_plan() const { return decoder_ != nullptr; }
  bool takes_decoder_plan(const std::vector<Tensor>& inputs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<DecoderPlan> decoder_;  // null: the entry is not a decode step it runs
  // Why runs do not take the decoder plan: the entry's reason, or the last run's (RunStats::plan).
  std::string decoder_why_;
  bool accepted_ = false;  // takes_decoder_plan said yes to the next run's inputs
};

}  // namespace grape::cuda
