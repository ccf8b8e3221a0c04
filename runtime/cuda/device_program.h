// What every CUDA executor of a session shares, built once: the generated kernels (compiled or
// from the kernel cache), the execution plan, and the device store — weights, states, the arena
// and the parameter blocks. Executors hold it by shared pointer; nothing is copied between them.
//
// Parameter blocks: one KParams per kernel, filled on the host by bind(dims) (which lays out the
// arena), and passed to the kernels by value (`__grid_constant__`: read through the constant
// cache, no dependent global load at a kernel's start; jit/emit_kernels.cpp). The array, followed
// by the i32 values of the plan's dim-value storages, is also kept on the device, uploaded in one
// copy only when something in it changed: the dim values are read from there, and code that
// wants the blocks in device memory (persistent kernels) finds them. Because every storage has a
// fixed address for a given binding, a block never changes between runs with the same dims, and
// loop bodies reuse theirs on every trip.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/kernel_spec.h"
#include "jit/parallel_compile.h"
#include "runtime/cuda/control_kernels.h"
#include "runtime/cuda/executor.h"
#include "runtime/cuda/tuning_cache.h"
#include "runtime/shape_buckets.h"
#include "runtime/tensor.h"
#include "scheduler/arena.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"
#include "scheduler/plan.h"
#include "scheduler/sequence.h"

namespace grape::cuda {

class DeviceProgram {
 public:
  DeviceProgram(const ir::Function& f, const std::map<std::string, Tensor>& weights, int device);
  ~DeviceProgram();
  DeviceProgram(const DeviceProgram&) = delete;
  DeviceProgram& operator=(const DeviceProgram&) = delete;

  const ir::Function& function() const { return f_; }
  // Source positions of ops, for run-time errors that point at one (throw_at); without a locator
  // (a program with no file) the position is empty and throw_at throws a plain Error.
  void set_locator(std::function<SourcePosition(const Span&)> locate) { locate_ = std::move(locate); }
  SourcePosition position(const ir::Operation* op) const {
    return op && locate_ ? locate_(op->loc) : SourcePosition{};
  }
  // The trip cap's error for the loop `op`: `FILE:LINE:COL: error: the loop has no `max` bound ...`,
  // as the CPU executor reports it.
  [[noreturn]] void throw_loop_cap(const ir::Operation* op, const RunControl& control) const;
  const scheduler::ExecPlan& plan() const { return plan_; }
  const jit::Device& device() const { return dev_; }
  // The stream runs are issued on: the caller's (grp_session_set_stream) or the program's own.
  CUstream stream() const { return caller_stream_ ? caller_stream_ : stream_.handle(); }
  void set_stream(CUstream caller) { caller_stream_ = caller; }
  // Waits for everything queued on stream(); errors name `what`.
  void synchronize(std::string_view what) const;
  const ControlKernels& control() const { return control_; }

  // Binds the symbol values of a run (see above). Returns true when it uploaded the blocks.
  // When the arena must grow, it grows to what the top of the dims' shape buckets needs, so that
  // the other calls of those buckets neither reallocate it nor invalidate addresses baked into
  // graphs.
  bool bind(const std::map<std::string, int64_t>& dims);
  // The session's shape buckets: the arena's growth, the graph executor's graphs and auto's
  // decisions all follow them.
  void set_buckets(const ShapeBuckets& buckets) { buckets_ = buckets; }
  const ShapeBuckets& buckets() const { return buckets_; }
  const std::map<std::string, int64_t>& dims() const { return dims_; }
  // Changes whenever a storage's device address changes (arena regrown, a state reallocated):
  // anything that baked addresses in (a CUDA graph) must be rebuilt.
  uint64_t generation() const { return generation_; }
  // The parameter blocks in device memory (slot k: kernel k), as the last bind uploaded them.
  CUdeviceptr device_blocks() const { return blocks_dev_.ptr(); }
  // Compiles one more source of this program (through the kernel cache) and loads it; `label`
  // names it in errors; `arch` overrides the device's target (the decoder plan's sm_90a). Counts
  // in kernels_compiled / kernels_from_cache and compile_ms.
  jit::Module build_module(const std::string& source, const std::string& label, const std::string& arch = "");
  // The host parameter blocks as bound now (what a graph's kernel nodes were built with).
  const std::vector<unsigned char>& host_blocks() const { return blocks_host_; }

  CUdeviceptr address(int storage) const;
  size_t bytes(int storage) const;  // with the bound dims

  struct Launch {
    CUfunction function = nullptr;
    scheduler::LaunchDims dims;  // the configuration (the heuristic's, or the tuner's choice)
    unsigned grid = 1, block = 1, shared_bytes = 0;
    const jit::KParams* params = nullptr;  // the kernel's parameter block (host copy, by value)
  };
  const Launch& launch(size_t kernel) const { return launches_.at(kernel); }
  // The row count the kernel's bound launch is specialised for (a row-count variant,
  // jit::kRowsDefine), or 0 when it runs the kernel's own code.
  int64_t bound_rows(size_t kernel) const { return bound_rows_.at(kernel); }
  // Kernels bound to a row-count variant at the bound dims.
  size_t row_variants_bound() const;
  const jit::KernelSpec& spec(size_t kernel) const { return specs_.at(kernel); }
  const std::vector<jit::KernelSpec>& specs() const { return specs_; }
  size_t num_kernels() const { return specs_.size(); }
  std::string kernel_label(size_t kernel) const;  // "kernel k_12 (add at line 4)"

  // Kernel timeline (GRAPE_KERNEL_TIMELINE=FILE; scheduler::kernel_timeline builds the kernels with
  // its stamps, jit/kernels/grid_dependency.cuh): each kernel's parameter block points at its
  // slot of kTimelineStamps; timeline_reset clears them before a run and timeline_write replaces
  // FILE with the run's launches, earliest first (µs from the run's first kernel start: start,
  // first and last block past the wait, end, and the template's phase marks if any). A kernel launched
  // several times in a run (a loop's body) shows its first start and last end. Block sequences, control
  // kernels and the mono executor's kernel carry no stamps.
  void timeline_reset();
  void timeline_write();
  std::string where(const ir::Operation* op) const;

  // Block sequences (scheduler/sequence.h): runs of small steps that one launch of one block
  // runs. sequence_at gives the sequence that starts at step i of `list` (a step list of plan())
  // and is small enough at the bound dims' buckets, or -1; executors launch sequence_function(q)
  // with one block of sequence(q).threads threads and its parameter block (by value) instead of
  // running steps [begin, end) one by one.
  size_t num_sequences() const { return sequences_.size(); }
  const scheduler::BlockSequence& sequence(size_t q) const { return sequences_.at(q); }
  int sequence_at(const std::vector<scheduler::Step>& list, size_t i) const;
  CUfunction sequence_function(size_t q) const { return seq_funcs_.at(q); }
  const jit::SeqParams& sequence_params(size_t q) const { return seq_params_.at(q); }
  // The dynamic shared memory its launch needs: its kernels' parameter blocks and the storages
  // that live only inside it (scheduler::sequence_locals), placed at the bound dims' buckets.
  unsigned sequence_shared_bytes(size_t q) const { return seq_shared_.at(q); }
  std::string sequence_label(size_t q) const;  // "block sequence 3 (k12 add .. k17 select)"

  // The inputs of the next run, before bind(): an input in device memory (Tensor::on_device) that
  // the plan never writes is read where it is — its storage's address becomes the caller's, so
  // only parameter blocks change (a graph's nodes are rewritten, never rebuilt); one the plan
  // writes in place is copied into its arena storage by upload_inputs, device to device.
  void use_inputs(const std::vector<Tensor>& inputs);
  // Asynchronous on the stream: inputs into their arena storages (host ones, and device ones the
  // plan writes); outputs into host tensors (complete after the stream synchronises).
  void upload_inputs(const std::vector<Tensor>& inputs);
  std::vector<Tensor> download_outputs();

  // Pinned host memory (a plain host tensor when pinning fails): what input and output copies
  // need to run at the bus's speed rather than through the driver's pageable staging.
  Tensor pinned_tensor(DType dtype, const Shape& shape) const;

  void set_state(const std::string& name, const Tensor& value);
  std::optional<Shape> state_shape(const std::string& name) const;
  Tensor state(const std::string& name) const;
  void reset_state();

  size_t device_bytes() const;
  double compile_ms() const { return compile_ms_; }
  size_t kernels_compiled() const { return kernels_compiled_; }
  size_t kernels_from_cache() const { return kernels_from_cache_; }
  // Autotuning (runtime/cuda/autotune.h): kernels measured by this program so far, the time that
  // took (at binds), and the kernels whose bound configuration is not the heuristic's.
  size_t kernels_tuned() const { return kernels_tuned_; }
  double tuning_ms() const { return tuning_ms_; }
  size_t kernels_retuned() const { return kernels_retuned_; }

 private:
  struct StateBuffer {
    jit::DeviceBuffer buf;
    DType dtype = DType::F32;
    Shape shape;
    bool present = false;  // reset_state keeps the memory (and its address) for the next value
  };

  void compile();
  void upload_weights(const std::map<std::string, Tensor>& weights);
  void fill_blocks();
  void decide_sequences();
  void fill_sequence_params();
  void plan_prefetches();
  void plan_sequence_locals();
  void place_sequence_locals(size_t q, const std::map<std::string, int64_t>& top);
  void build_wide(const std::vector<size_t>& kernels);
  void build_sequences(const std::vector<size_t>& sequences);
  // The row count a row-count variant of kernel k would have at the bound dims, or 0 (not a
  // matrix product with a runtime row count <= kGemvMaxRows, or the variants are off).
  int64_t variant_rows(size_t k) const;
  void build_row_variants(const std::vector<std::pair<size_t, int64_t>>& wanted);
  const void* image_of(const jit::CompileOutcome& built);
  CUfunction function_for(size_t kernel, const scheduler::LaunchDims& dims) const;  // null: not built
  void apply_launch(size_t kernel, const scheduler::LaunchDims& dims);
  bool upload_blocks();  // when they changed; returns whether it did
  // The bound dims raised to the top of their shape buckets (the arena's size, tuning keys).
  std::map<std::string, int64_t> bucket_top() const;
  // Picks each kernel's configuration among its candidates: forced, from the tuning cache, or
  // measured (`uploaded`: the blocks were uploaded for it).
  void tune(bool& uploaded);
  std::vector<double> measure(size_t kernel, const std::vector<scheduler::LaunchCandidate>& candidates);

  const ir::Function& f_;
  std::function<SourcePosition(const Span&)> locate_;
  jit::Device dev_;
  jit::Stream stream_;
  scheduler::FusionPlan fusion_;
  std::vector<jit::KernelSpec> specs_;
  scheduler::ExecPlan plan_;
  std::vector<jit::Module> modules_;
  std::vector<CUfunction> funcs_,
      tc_funcs_;  // tc: matrix products' tensor-core entry points, attention_mma's key split
  // Matrix products' 128 x 128 tile entry points, built at the first bind that launches them
  // (build_wide); wide_failed_: that build failed (no NVRTC, say), so the kernel keeps 64 x 64.
  std::vector<CUfunction> wide_funcs_;
  // The wide variant's 128 x 64 wgmma entry (jit::kWgmma64Suffix) of kernels with
  // LaunchRule::wgmma, when built for sm_90a; else null.
  std::vector<CUfunction> wgmma64_funcs_;
  std::vector<CUfunction> wgmma96_funcs_;    // its 128 x 96 entry (jit::kWgmma96Suffix), likewise
  std::vector<CUfunction> wgmma_m64_funcs_;  // its 64 x 64 entry (jit::kWgmmaM64Suffix), likewise
  std::vector<bool> wide_failed_;
  // Row-count variants (jit::rows_variant_source) by (kernel, rows): the GEMV entry point compiled
  // for that row count, built at the first bind with it; failed ones (no NVRTC) keep the kernel's own.
  std::map<std::pair<size_t, int64_t>, CUfunction> row_funcs_;
  std::set<std::pair<size_t, int64_t>> row_failed_;
  std::vector<int64_t> bound_rows_;  // per kernel: bound_rows()
  // Per kernel: the kernel whose weight it prefetches into L2 (-1: none), and per kernel the size
  // of its weight when it is a prefetch target (plan_prefetches).
  std::vector<int> prefetch_of_;
  std::vector<uint64_t> prefetch_bytes_;
  ControlKernels control_;
  std::map<std::string, jit::DeviceBuffer> weights_;
  std::map<std::string, StateBuffer> state_;
  std::vector<size_t> dim_slot_;       // per storage: index of its i32 among the dim values
  std::vector<bool> written_;          // per storage: some step writes it (a copy, an update, a loop)
  std::vector<CUdeviceptr> external_;  // per storage: a caller's device input read in place, or 0
  CUstream caller_stream_ = nullptr;
  // Per output: pinned host tensors that earlier runs returned; one nobody else holds any more
  // (use_count 1) and of the right type receives the next run's output, so a caller that keeps
  // no outputs (the C API, which holds the last run's until the next) costs no allocation.
  std::vector<std::vector<Tensor>> output_pool_;
  size_t num_dim_values_ = 0;

  std::map<std::string, int64_t> dims_;
  ShapeBuckets buckets_;
  bool bound_ = false;
  uint64_t generation_ = 1;
  scheduler::ArenaLayout layout_;
  jit::DeviceBuffer arena_;
  std::vector<jit::DeviceBuffer> scratch_;  // per kernel, zero-initialised (split-K counters)
  // kTimelineStamps per kernel when the kernels were built with them (GRAPE_KERNEL_TIMELINE set
  // then): grid_dependency.cuh's 4 stamps and 4 phase marks.
  static constexpr size_t kTimelineStamps = 8;
  bool timeline_on_ = scheduler::kernel_timeline();
  jit::DeviceBuffer timeline_;
  std::vector<unsigned long long> timeline_init_;
  std::vector<Launch> launches_;
  std::vector<scheduler::BlockSequence> sequences_;
  std::map<std::pair<const std::vector<scheduler::Step>*, size_t>, size_t> sequence_start_;
  std::vector<jit::Module> seq_modules_;
  std::vector<CUfunction> seq_funcs_;       // null until built (build_sequences)
  std::vector<bool> seq_failed_;            // did not compile: its steps run one by one
  std::vector<jit::SeqParams> seq_params_;  // host copies, filled at each bind
  std::vector<bool> seq_active_;            // small enough at the bound dims' buckets
  std::vector<std::vector<scheduler::SequenceLocal>> seq_locals_;  // per sequence, at most its patches
  std::vector<jit::SeqParams> seq_local_fields_;  // the shared-memory fields alone, set at dims changes
  std::vector<unsigned> seq_shared_;              // dynamic shared bytes of each launch
  std::vector<unsigned char> blocks_host_, blocks_uploaded_;
  // gemv_mma kernels' weight tensor maps (KParams::weight_map; encode_weight_maps), 128 bytes per
  // kernel, and what was last uploaded.
  void encode_weight_maps();
  std::vector<unsigned char> weight_maps_host_, weight_maps_uploaded_;
  jit::DeviceBuffer weight_maps_;
  jit::DeviceBuffer blocks_dev_;
  jit::PinnedBuffer blocks_pinned_;

  double compile_ms_ = 0;
  size_t kernels_compiled_ = 0, kernels_from_cache_ = 0;
  std::unique_ptr<TuningCache> tuning_cache_;             // opened at the first decision
  std::vector<std::optional<jit::Hash128>> source_hash_;  // per kernel, for tuning keys
  size_t kernels_tuned_ = 0, kernels_retuned_ = 0;
  double tuning_ms_ = 0;
};

}  // namespace grape::cuda
