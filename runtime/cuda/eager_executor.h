// The eager CUDA executor: one launch per generated kernel, on one stream. Weights are uploaded
// once, state stays on the device between runs, inputs and outputs are copied in and out. The
// only host synchronisations inside a run are the reads of device loops' continue-conditions;
// they are counted in the run statistics (the graph executor will remove them).
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "runtime/tensor.h"

namespace grape::cuda {

struct RunStats {
  int64_t kernels = 0;         // kernel launches in the last run
  int64_t host_syncs = 0;      // host synchronisations inside the last run (loop conditions)
  int64_t copies = 0;          // device-to-device copies (loop-carried values, in-place fallbacks)
  double device_ms = 0;        // the last run's time on the stream, measured with CUDA events
  size_t device_bytes = 0;     // device memory held: weights, state, buffer pool, parameter blocks
  double compile_ms = 0;       // time to build the kernels at construction (NVRTC or the cache)
  size_t kernels_compiled = 0;
  size_t kernels_from_cache = 0;
};

class EagerExecutor {
 public:
  // Compiles (or loads from the kernel cache) every kernel of `f` for the device and uploads the
  // weights. Throws grape::Error (NoDevice without a driver).
  EagerExecutor(const ir::Function& f, const std::map<std::string, Tensor>& weights, int device);
  ~EagerExecutor();
  EagerExecutor(const EagerExecutor&) = delete;
  EagerExecutor& operator=(const EagerExecutor&) = delete;

  // Runs with host inputs in parameter order and the symbolic dims they bind. Every state the
  // function reads must have been set with set_state first.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims);

  void set_state(const std::string& name, const Tensor& value);  // uploads (creates or replaces)
  std::optional<Shape> state_shape(const std::string& name) const;
  Tensor state(const std::string& name) const;  // downloads
  void reset_state();

  const RunStats& stats() const;
  std::string device_name() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape::cuda
