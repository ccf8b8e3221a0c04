// The eager CUDA executor: the plan's steps in order on one stream, one launch per kernel. Inputs
// and outputs are copied in and out; the only host synchronisations inside a run are the reads of
// device loops' continue-conditions, counted in the run statistics (the graph executor has none).
#pragma once
#include <memory>

#include "runtime/cuda/executor.h"

namespace grape::cuda {

class DeviceProgram;

class EagerExecutor : public Executor {
 public:
  EagerExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control);
  ~EagerExecutor() override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::map<std::string, int64_t>& dims) override;
  const char* name() const override { return "eager"; }
  void set_profiling(bool on) override;
  ProfileReport profile() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::cuda
