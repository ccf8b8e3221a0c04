// The one interface a session holds on the CUDA backend. Every executor runs the same execution
// plan (scheduler/plan.h) over the same device program (runtime/cuda/device_program.h: kernels,
// weights, states, arena, parameter blocks); they differ only in how the steps reach the GPU:
//   eager  (eager_executor.cpp)  one launch per step on a stream, loop conditions read by the host;
//   graph  (graph_executor.cpp)  one CUDA graph per (entry, dims), loops as conditional WHILE nodes,
//                                no host synchronisation inside a run;
//   auto   (auto_executor.cpp)   both over the same program: per shape bucket, the first calls
//                                alternate and are timed, then the faster one runs.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/error.h"
#include "ir/ir.h"
#include "runtime/auto_decision.h"
#include "runtime/kernel_profile.h"
#include "runtime/run_control.h"
#include "runtime/shape_buckets.h"
#include "runtime/tensor.h"

namespace grape::jit {
class Device;
}

namespace grape::cuda {

struct RunStats {
  int64_t kernels = 0;         // kernel launches in the last run (graph: kernel nodes executed)
  int64_t host_syncs = 0;      // host synchronisations inside the last run (loop conditions)
  int64_t copies = 0;          // device-to-device copies (loop-carried values, in-place fallbacks, states)
  int64_t param_uploads = 0;   // parameter-block uploads in the last run (0 when nothing changed)
  int64_t graph_launches = 0;  // graph executor: graphs launched in the last run
  size_t graphs = 0;           // graph executor: instantiated graphs held
  size_t graph_bytes = 0;      // graph executor: device memory those graphs took (see GraphOptions)
  int64_t graph_updates = 0;   // graph executor: 1 when the last run rewrote its graph's nodes
  double graph_build_ms = 0;   // graph executor: building and instantiating them, in total
  double device_ms = 0;        // the last run's time on the stream, measured with CUDA events
  size_t device_bytes = 0;     // device memory held: weights, state, arena, parameter blocks, scratch
  double compile_ms = 0;       // time to build the kernels at construction (NVRTC or the cache)
  size_t kernels_compiled = 0;
  size_t kernels_from_cache = 0;
  // Autotuning: kernels measured so far, the time it took, kernels not on the heuristic's choice.
  size_t kernels_tuned = 0;
  size_t kernels_retuned = 0;
  // Matrix products bound to a row-count variant (jit::kRowsDefine) at the last run's dims.
  size_t row_variants = 0;
  double tuning_ms = 0;
  // Mono executor: "decoder" when the last run took the decoder plan (runtime/cuda/decoder_plan.h),
  // else "general (<why not>)"; "" for the other executors.
  std::string plan;
};

// How the graph executor files and keeps its graphs (docs/execution.md, "Shape buckets").
struct GraphOptions {
  // One graph per bucket of the entry's symbolic dims (default pow2). make_executor gives them to
  // the DeviceProgram, which the executors read them from.
  ShapeBuckets buckets;
  // Instantiated graphs are evicted least recently used first when the device memory they took
  // (free-memory difference around instantiation and upload) exceeds this; 0: the default.
  size_t memory_budget = 0;
  static constexpr size_t kDefaultMemoryBudget = size_t{1} << 30;
  size_t budget() const { return memory_budget ? memory_budget : kDefaultMemoryBudget; }
};

class DeviceProgram;

class Executor {
 public:
  virtual ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs with inputs in parameter order (host tensors, or device ones: Tensor::wrap_device) and the symbolic
  // dims they bind. Every state the function reads must have been set with set_state first.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                                  const std::map<std::string, int64_t>& dims) = 0;
  virtual const char* name() const = 0;
  // The executor that ran the last call: name() itself, except for "auto", which runs "eager" or
  // "graph" ("auto" before its first call).
  virtual const char* last_executor() const { return name(); }
  // "auto" only: its decision per shape bucket, and AutoDecision::summary() of the last call's
  // bucket ("" for the other executors).
  virtual std::vector<AutoDecision> auto_decisions() const { return {}; }
  virtual std::string auto_state() const { return ""; }

  void set_state(const std::string& name, const Tensor& value);  // uploads (creates or replaces)
  std::optional<Shape> state_shape(const std::string& name) const;
  Tensor state(const std::string& name) const;  // downloads
  void reset_state();

  const RunStats& stats() const { return stats_; }
  // GRAPE_KERNEL_TIMELINE=FILE: writes the last run's kernel timeline (DeviceProgram::timeline_write).
  void write_timeline();
  // Per-kernel device times of the runs from now on (on: clears what was collected). Only the
  // eager executor measures them; the others throw ErrorCode::Unsupported.
  virtual void set_profiling(bool on);
  virtual ProfileReport profile() const;
  std::string device_name() const;
  // Runs are issued on `stream` (a CUstream of the session's device, primary context; null: the
  // program's own). A run still returns only when it is complete.
  void set_stream(CUstream stream);
  // Zero-filled device memory of the program's GPU as a device tensor (Tensor::wrap_device) that
  // keeps the memory alive.
  Tensor device_tensor(DType dtype, const Shape& shape);
  // Host memory the device copies to and from at full speed (pinned: cuMemAllocHost), as a host
  // tensor; a plain host tensor when pinned memory cannot be had.
  Tensor host_tensor(DType dtype, const Shape& shape);

 protected:
  Executor(std::shared_ptr<DeviceProgram> program, const RunControl& control);
  // Takes the run's inputs' places (DeviceProgram::use_inputs), binds `dims` (DeviceProgram::bind: true when
  // the parameter blocks were uploaded) and copies the program's build counters into stats_, which grow when
  // a binding first needs a wide variant of a matrix product (built then, not at session start).
  bool bind(const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims);
  std::shared_ptr<DeviceProgram> program_;
  // The session's trip cap for loops without `max`, deadline and interrupt flag (outlives this).
  const RunControl& control_;
  RunStats stats_;
};

// Whether kernels may be launched behind their predecessor (programmatic dependent launch: the
// graph's programmatic edges, the eager executor's programmatic stream serialization): the GPU
// has it (compute capability 9.0 and newer) and the measurement switch `knob` (GRAPE_GRAPH_PDL,
// GRAPE_EAGER_PDL) is not 0.
bool programmatic_launch(const jit::Device& device, const char* knob);

// "eager", "graph", "mono" (runtime/cuda/mono_executor.h) or "auto" (runtime/cuda/auto_executor.h). Compiles
// (or loads from the kernel cache) every kernel of `f` and uploads the weights. `control` must outlive the
// executor. Throws grape::Error (NoDevice without a driver; Unsupported for "graph" with a driver without
// conditional graph nodes, where "auto" runs eager).
// `locate` gives an op's source position for run-time errors (FILE:LINE:COL: error: ...).
std::unique_ptr<Executor> make_executor(const std::string& kind, const ir::Function& f,
                                        const std::map<std::string, Tensor>& weights, int device,
                                        const RunControl& control,
                                        std::function<SourcePosition(const Span&)> locate = {},
                                        const GraphOptions& graph = {});

}  // namespace grape::cuda
