// The library-level API the CLI (and later the C API) sits on: a Model is a compiled .grp program
// plus its weights (immutable once built, shareable); a Session runs one entry of a model on the
// CPU reference executor and owns the model's state between calls.
// Every failure throws grape::Error with a complete, user-facing message.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "frontend/limits.h"
#include "runtime/auto_decision.h"
#include "runtime/kernel_profile.h"
#include "runtime/tensor.h"

namespace grape {

namespace ir {
struct Module;
}
struct Span;

struct ModelOptions {
  std::map<std::string, int64_t> defines;  // -D NAME=VALUE const overrides
  bool optimize = true;                    // false: the IR exactly as lowered (for `grape ir --no-optimize`)
  bool require_loop_bounds = false;        // reject device loops without a trip bound
  CompileLimits limits;                    // resource limits of the compiler (frontend/limits.h)
  // "NAME=N" settings of single limits (the CLI's --limit, grp_model_options.limits), applied
  // after $GRAPE_LIMITS, which overrides `limits`.
  std::vector<std::string> limit_overrides;
};

// A tensor type as declared: dtype plus dims, each dim either a number or a symbolic expression.
struct TensorSignature {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::string> dims;  // "4", "B", "S+1"
  std::vector<int64_t> fixed;     // per dim: its size if constant, else -1
  std::string to_string() const;  // "f16[B, 768]"
};

// Thread safety: a Model's const methods may be called concurrently; setting weights may race
// with creating sessions (a Session snapshots the weights current at its creation).
class Model {
 public:
  static std::shared_ptr<Model> load_file(const std::string& path, const ModelOptions& opts = {});
  static std::shared_ptr<Model> load_source(const std::string& source, const std::string& name,
                                            const ModelOptions& opts = {});
  ~Model();

  void set_weights_file(const std::string& safetensors_path);
  // The bytes of a safetensors file; `name` is used in error messages.
  void set_weights_bytes(const uint8_t* data, size_t size, const std::string& name);
  void set_random_weights(uint64_t seed);
  // Weights by their full names (prefix included), validated like a file.
  void set_weights(const std::map<std::string, Tensor>& weights);
  bool has_weights() const;
  std::shared_ptr<const std::map<std::string, Tensor>> weights() const;

  const ir::Module& module() const;
  std::vector<std::string> entry_names() const;
  // Weights as declared: full file names (prefix applied) with dtypes and concrete shapes.
  std::vector<TensorSignature> weight_signatures() const;
  // A span of the model's source as "file:line:col" ("" for a synthesized or foreign span).
  std::string locate(const Span& s) const;
  // The same as file, line and column (an empty file for such a span), for throw_at.
  SourcePosition position(const Span& s) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  Model();
  std::unique_ptr<Impl> impl_;
};

struct SessionOptions {
  std::string entry;             // "" means "main"
  std::string backend = "auto";  // "cpu", "cuda", or "auto" (CUDA when a driver and GPU exist)
  // CUDA: "auto" (per shape bucket, eager or graph, whichever its first calls measured faster;
  // docs/execution.md) | "eager" | "graph" | "mono" (one persistent kernel, entries without device
  // loops; runtime/cuda/mono_executor.h) (dataflow: not yet)
  std::string executor = "auto";
  int device = 0;
  // Trips of a device loop without `max` before the run stops with an error; 0: the default
  // ($GRAPE_MAX_LOOP_TRIPS if set, else kDefaultMaxLoopTrips = 10^5, runtime/run_control.h).
  int64_t max_loop_trips = 0;
  // Wall-clock limit of one run in seconds; 0: none. A run past it stops with
  // ErrorCode::Interrupted (CPU and the eager CUDA executor: within one op or loop trip, the eager
  // executor only before it writes the first state; the graph executor checks it only before
  // launching its graph).
  double timeout_seconds = 0;
  // CUDA graph executor (and auto): shape buckets per symbolic dim, "S=pow2;T=16,64,256;B=exact"
  // (runtime/shape_buckets.h; "" : every dim pow2), and the device memory its instantiated graphs
  // may hold before the least recently used is evicted (0: GraphOptions::kDefaultMemoryBudget).
  std::string buckets = "";
  int64_t graph_memory_bytes = 0;
};

// What the last run did (CUDA backend; the CPU backend reports zeros except `backend`).
struct RunStats {
  std::string backend;      // "cpu" or "cuda (<device>)"
  int64_t kernels = 0;      // kernel launches
  int64_t host_syncs = 0;   // host synchronisations inside the run (device loop conditions)
  double device_ms = 0;     // time on the stream, CUDA events
  size_t device_bytes = 0;  // device memory held by the session
  double compile_ms = 0;    // building the kernels when the session was created
  size_t kernels_compiled = 0, kernels_from_cache = 0;
  // Autotuning (CUDA): kernels whose launch configurations the session measured so far, the time
  // that took, and the kernels bound now to a configuration other than the heuristic's.
  size_t kernels_tuned = 0, kernels_retuned = 0;
  // Matrix products of the last run that ran code specialised for their runtime row count
  // (decode's batch; docs/kernels.md, "Row-count variants").
  size_t row_variants = 0;
  double tuning_ms = 0;
  // Executor "mono": "decoder" when the run took the decoder plan (docs/execution.md), else
  // "general (<why not>)"; "" for the other executors.
  std::string plan;
  int64_t graph_launches = 0;  // CUDA graphs launched (graph executor)
  size_t graphs = 0;           // instantiated CUDA graphs held
  size_t graph_bytes = 0;      // device memory they took
  int64_t graph_updates = 0;   // 1 when the run rewrote its graph's nodes for new dims (same bucket)
  int64_t param_uploads = 0;   // parameter-block uploads in the run (0 or 1)
  // The executor that ran the call: "cpu", "eager" or "graph" (an "auto" session before its first
  // call: "auto").
  std::string executor;
  // Executor "auto": its decision for the call's shape bucket, AutoDecision::summary()
  // ("graph (graph 0.740 ms vs eager 0.890 ms, ...)", "measuring (3 of 8 calls)"); "" otherwise.
  std::string auto_state;
};

class Session {
 public:
  // entry: "" means "main"; runs on the CPU reference backend.
  Session(std::shared_ptr<const Model> model, const std::string& entry);
  Session(std::shared_ptr<const Model> model, const SessionOptions& options);
  // The backend the session runs on ("cpu" or "cuda"); with backend "auto" and no usable GPU it
  // is "cpu", and fallback_reason() says why.
  const std::string& backend() const;
  const std::string& fallback_reason() const;
  // The executor it was created with: "cpu" on the CPU backend, else "eager", "graph", "mono" or "auto"
  // (which runs each call on eager or graph: RunStats::executor says which).
  const std::string& executor() const;
  // What the last run did (also after a failed run); valid until the next run.
  const RunStats& last_run_stats() const;
  // Executor "auto": its decision per shape bucket, in the order of the buckets' first calls
  // (empty for the other executors and the CPU backend).
  std::vector<AutoDecision> auto_decisions() const;
  // Per-kernel device times of the runs from now on (on: clears what was collected); only the
  // CUDA backend's eager executor measures them (ErrorCode::Unsupported otherwise, naming why).
  void set_profiling(bool on);
  ProfileReport kernel_profile() const;
  // The ordinal of the GPU the session runs on; -1 on the CPU backend.
  int device() const;
  // Runs are issued on `stream` (a CUstream / cudaStream_t of the session's GPU; null: the
  // session's own stream), after the work the caller queued on it before the run; run() still
  // returns when the run is complete. The CPU backend accepts only null (ErrorCode::Unsupported).
  void set_stream(void* stream);
  // Zero-filled device memory of the session's GPU, as a tensor to pass to run() (CUDA backend
  // only; ErrorCode::Unsupported on the CPU): the caller fills it on the device (cudaMemcpy, its
  // own kernels) and no host copy happens. Tensor::wrap_device wraps memory the caller allocated.
  Tensor device_tensor(DType dtype, const Shape& shape);
  // A zero-filled host tensor for inputs: on the CUDA backend in pinned memory, which the GPU
  // copies from several times faster than from ordinary memory (ordinary memory when pinning
  // fails, and on the CPU backend).
  Tensor host_tensor(DType dtype, const Shape& shape);
  ~Session();

  const std::vector<TensorSignature>& inputs() const;
  const std::vector<TensorSignature>& outputs() const;
  // The model's states, in declaration order.
  const std::vector<TensorSignature>& states() const;
  // Inputs bound by parameter name; every parameter must be given exactly once. On failure the
  // state is unchanged (CPU backend; CUDA: when stopped by interrupt() or the timeout, see
  // docs/execution.md, "Bounded runs").
  std::vector<Tensor> run(const std::vector<std::pair<std::string, Tensor>>& inputs);
  // The shapes run() would return for these inputs (validating them as run() does), without
  // executing anything.
  std::vector<Shape> output_shapes(const std::vector<std::pair<std::string, Tensor>>& inputs) const;
  void reset_state();
  // Stops the run in progress (from another thread, or a signal handler: it only sets an atomic
  // flag) with ErrorCode::Interrupted; the session stays usable. No effect when no run is in
  // progress.
  void interrupt() noexcept;
  // Current value of a state tensor (undefined Tensor before the first run binds its shape).
  Tensor state(const std::string& name) const;
  // Replaces a state tensor (declared dtype and rank, constant dims matching; Type error
  // otherwise). Later runs must bind its symbolic dims to the same sizes.
  void set_state(const std::string& name, const Tensor& value);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace grape
