#include "runtime/cuda/mono_executor.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <utility>

#include "base/error.h"
#include "jit/cuda_driver.h"
#include "jit/kernel_source.h"
#include "jit/persistent_source.h"
#include "runtime/cuda/decoder_plan.h"
#include "runtime/cuda/device_program.h"
#include "runtime/cuda/trace_file.h"
#include "scheduler/launch.h"
#include "scheduler/prefetch.h"

namespace grape::cuda {

namespace {

struct Range {
  CUdeviceptr begin = 0, end = 0;
  bool overlaps(const Range& o) const { return begin < o.end && o.begin < end; }
};

bool overlaps_any(const Range& r, const std::vector<Range>& set) {
  return std::any_of(set.begin(), set.end(), [&](const Range& o) { return r.overlaps(o); });
}

}  // namespace

struct MonoExecutor::Impl {
  DeviceProgram& p;
  jit::Event start, stop;
  jit::DeviceBuffer barrier;  // PersistentParams::barrier
  jit::DeviceBuffer copy_table, prefetch_table;
  std::vector<jit::PersistentCopy> copies_host;
  std::vector<jit::PersistentRange> prefetch_host;  // per launch
  struct Built {
    jit::Module module;
    CUfunction function = nullptr;
    unsigned grid = 0, shared_bytes = 0;
  };
  // Per signature (entry points, barriers, block size): the persistent kernel built for it.
  std::map<std::string, Built> built;
  int threads = 0;
  // The last binding's steps and kernel, planned again only when an address or a dim changed
  // (the launch configurations follow the dims: the tuner decides at a bucket's first bind).
  std::vector<jit::PersistentStep> steps;
  size_t copies = 0;
  Built* kernel = nullptr;
  uint64_t steps_generation = 0;
  std::map<std::string, int64_t> steps_dims;

  void prepare() {
    if (kernel && steps_generation == p.generation() && steps_dims == p.dims()) return;
    kernel = nullptr;
    unsigned shared = 0;
    steps = plan_steps(shared, copies);
    kernel = &kernel_for(steps, shared);
    upload_tables();
    steps_generation = p.generation();
    steps_dims = p.dims();
  }

  explicit Impl(DeviceProgram& program)
      : p(program), start(p.device()), stop(p.device()), barrier(p.device(), 16, "the grid barrier") {
    barrier.fill_bytes(0, p.stream());
  }

  Range range(int storage) const {
    const CUdeviceptr a = p.address(storage);
    return {a, a + p.bytes(storage)};
  }

  // The steps at the bound dims: each kernel's entry point, where barriers go, the copies' table.
  std::vector<jit::PersistentStep> plan_steps(unsigned& shared, size_t& copies) {
    const scheduler::ExecPlan& plan = p.plan();
    std::vector<jit::PersistentStep> steps;
    std::vector<Range> reads, writes;           // since the last barrier
    std::vector<jit::PersistentRange> weights;  // per launch: its matrix product's weight, or none
    copies_host.clear();
    shared = 0;
    threads = 0;
    for (const scheduler::Step& s : plan.steps) {
      jit::PersistentStep st;
      std::vector<Range> r, w;
      if (s.kind == scheduler::Step::Kind::Copy) {
        st.kind = jit::PersistentStep::Kind::Copy;
        st.index = copies_host.size();
        jit::PersistentCopy c{};
        c.dst = reinterpret_cast<void*>(p.address(s.dst));
        c.src = reinterpret_cast<const void*>(p.address(s.src));
        c.bytes = p.bytes(s.dst);
        if (s.pred != ir::kNoValue) {
          const int ps = plan.storage(s.pred);
          c.pred = reinterpret_cast<const unsigned char*>(p.address(ps));
          r.push_back(range(ps));
        }
        copies_host.push_back(c);
        r.push_back(range(s.src));
        w.push_back(range(s.dst));
      } else if (s.kind == scheduler::Step::Kind::Launch) {
        const size_t k = s.index;
        const DeviceProgram::Launch& l = p.launch(k);
        const scheduler::LaunchDims& d = l.dims;
        if (d.narrow || d.n96 || d.m64 || (d.cluster > 1 && !d.cluster_optional))
          throw Error(ErrorCode::Unsupported, "the mono executor cannot run " + p.kernel_label(k) +
                                                  ": at these dims it launches a Hopper wgmma tile or a "
                                                  "thread-block cluster (use --executor graph)");
        if (threads == 0) threads = static_cast<int>(l.block);
        if (static_cast<int>(l.block) != threads)
          throw Error(ErrorCode::Unsupported, "the mono executor runs kernels of one block size; " +
                                                  p.kernel_label(k) + " has " + std::to_string(l.block) +
                                                  " threads, an earlier kernel " + std::to_string(threads));
        st.index = k;
        st.entry = std::string(jit::kKernelSymbol) + (d.wide           ? jit::kWideSuffix
                                                      : d.tensor_cores ? jit::kTensorCoreSuffix
                                                                       : "");
        st.rows = p.bound_rows(k);
        shared = std::max(shared, l.shared_bytes);
        const jit::KernelSpec& spec = p.spec(k);
        for (size_t b = 0; b < spec.buffers.size(); ++b)
          (b < spec.num_inputs ? r : w).push_back(range(plan.storage(spec.buffers[b])));
        if (plan.kernel_pred[k] != ir::kNoValue) r.push_back(range(plan.storage(plan.kernel_pred[k])));
        weights.push_back(weight_of(k));
      } else {
        throw Error(ErrorCode::Internal, "the mono executor was given a device loop");
      }
      bool conflict = false;
      for (const Range& x : r) conflict = conflict || overlaps_any(x, writes);
      for (const Range& x : w) conflict = conflict || overlaps_any(x, writes) || overlaps_any(x, reads);
      if (conflict && !steps.empty()) {
        st.barrier_before = true;
        reads.clear();
        writes.clear();
      }
      reads.insert(reads.end(), r.begin(), r.end());
      writes.insert(writes.end(), w.begin(), w.end());
      steps.push_back(std::move(st));
    }
    copies = copies_host.size();
    if (threads == 0) threads = 256;
    // GRAPE_MONO_PREFETCH=1: each launch requests the weight of the next matrix product after it
    // into L2 (MonoNN's overlap of weight loads with the steps and barriers before their product).
    // Off by default: runs 147-148 measured no gain while the steps themselves are slow (the
    // same kernel either way: the ranges are data).
    prefetch_host.assign(weights.size(), jit::PersistentRange{nullptr, 0});
    if (scheduler::env_knob("GRAPE_MONO_PREFETCH", 0, 1, 0) == 1) {
      jit::PersistentRange next{nullptr, 0};
      for (size_t n = weights.size(); n-- > 0;) {
        prefetch_host[n] = next;
        if (weights[n].bytes != 0) next = weights[n];
      }
    }
    return steps;
  }

  // The weight a matrix product reads, when L2 can hold it beside the weight being read.
  jit::PersistentRange weight_of(size_t k) const {
    const jit::KernelSpec& spec = p.spec(k);
    const int wb = spec.launch.weight_buffer;
    if (spec.launch.kind != jit::LaunchRule::MatrixProduct || wb < 0) return {nullptr, 0};
    const int storage = p.plan().storage(spec.buffers.at(static_cast<size_t>(wb)));
    const size_t bytes = p.bytes(storage);
    if (bytes > scheduler::kPrefetchMaxBytes) return {nullptr, 0};
    return {reinterpret_cast<const void*>(p.address(storage)), bytes};
  }

  Built& kernel_for(const std::vector<jit::PersistentStep>& steps, unsigned shared) {
    std::string key = std::to_string(threads) + ":" + std::to_string(shared);
    for (const jit::PersistentStep& s : steps)
      key += (s.barrier_before ? "|" : ",") + std::to_string(static_cast<int>(s.kind)) + s.entry +
             (s.rows ? "@" + std::to_string(s.rows) : "");
    auto it = built.find(key);
    if (it != built.end()) return it->second;
    std::string source;
    try {
      source = jit::persistent_kernel_source(steps, p.specs(), threads);
    } catch (const std::invalid_argument& e) {
      throw Error(ErrorCode::Unsupported, std::string("the mono executor: ") + e.what());
    }
    const std::string label = "the persistent kernel of " + p.function().name;
    // GRAPE_DUMP_KERNELS=DIR: its source as DIR/<entry>_persistent<n>.cu, as codegen dumps kernels.
    if (const char* dir = std::getenv("GRAPE_DUMP_KERNELS"); dir && *dir)
      std::ofstream(std::string(dir) + "/" + p.function().name + "_persistent" +
                    std::to_string(built.size()) + ".cu")
          << source;
    Built b;
    b.module = p.build_module(source, label);
    b.function = b.module.function(jit::kPersistentSymbol);
    b.shared_bytes = shared;
    jit::check(jit::driver().cuFuncSetAttribute(b.function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                static_cast<int>(shared)),
               "cuFuncSetAttribute", label);
    int per_sm = 0;
    jit::check(
        jit::driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, b.function, threads, shared),
        "cuOccupancyMaxActiveBlocksPerMultiprocessor", label);
    if (per_sm < 1)
      throw Error(ErrorCode::Unsupported, label + " does not fit a multiprocessor (" +
                                              std::to_string(threads) + " threads, " +
                                              std::to_string(shared) + " bytes of shared memory)");
    // GRAPE_MONO_BLOCKS_PER_SM caps the blocks per multiprocessor (a measurement knob; 0: as many as fit).
    const int cap = scheduler::env_knob("GRAPE_MONO_BLOCKS_PER_SM", 0, 64, 0);
    if (cap > 0) per_sm = std::min(per_sm, cap);
    b.grid = static_cast<unsigned>(per_sm * p.device().sm_count());
    return built.emplace(key, std::move(b)).first->second;
  }

  // GRAPE_MONO_TRACE=FILE: block 0's %globaltimer stamps at every barrier (jit/kernel_abi.h,
  // PersistentParams::trace), written to FILE after each run as one line per phase: its time
  // from leaving the previous barrier to leaving this one, block 0's share of it before it
  // arrived, and the steps it ran. A measurement tool: where a whole-entry kernel spends its time.
  jit::DeviceBuffer trace_buffer;
  std::vector<unsigned long long> trace_host;
  unsigned long long* trace_start(const std::vector<jit::PersistentStep>& steps) {
    const char* file = std::getenv("GRAPE_MONO_TRACE");
    if (!file || !*file) return nullptr;
    size_t barriers = 1;  // the kernel's closing one
    for (const jit::PersistentStep& s : steps) barriers += s.barrier_before ? 1 : 0;
    trace_host.assign(2 * (barriers + 1), 0);
    const size_t bytes = trace_host.size() * sizeof(unsigned long long);
    if (trace_buffer.size() < bytes) trace_buffer = jit::DeviceBuffer(p.device(), bytes, "the mono trace");
    return reinterpret_cast<unsigned long long*>(trace_buffer.ptr());
  }
  void trace_write(const std::vector<jit::PersistentStep>& steps) {
    const char* file = std::getenv("GRAPE_MONO_TRACE");
    if (!file || !*file || trace_host.empty()) return;
    trace_buffer.copy_to_host(trace_host.data(), trace_host.size() * sizeof(unsigned long long), p.stream());
    p.synchronize("the mono trace");
    std::ofstream out(file);
    if (!out) {
      warn_unwritable_trace(file);
      return;
    }
    out << "# phase  us  block0_work_us  steps\n";
    std::vector<std::string> names(1);
    for (const jit::PersistentStep& s : steps) {
      if (s.barrier_before) names.emplace_back();
      names.back() += s.kind == jit::PersistentStep::Kind::Copy ? " copy" : " " + p.spec(s.index).name;
    }
    const double total = (trace_host[2 * names.size() + 1] - trace_host[0]) / 1000.0;
    for (size_t i = 0; i < names.size(); ++i) {
      const unsigned long long left = i == 0 ? trace_host[0] : trace_host[2 * i + 1];
      out << i << " " << (trace_host[2 * (i + 1) + 1] - left) / 1000.0 << " "
          << (trace_host[2 * (i + 1)] - left) / 1000.0 << names[i] << "\n";
    }
    out << "# total " << total << " us, " << names.size() << " phases\n";
  }

  // The copies' and prefetches' tables (plan_steps filled them), into device memory.
  void upload_tables() {
    const size_t copy_bytes = std::max<size_t>(copies_host.size(), 1) * sizeof(jit::PersistentCopy);
    const size_t prefetch_bytes = std::max<size_t>(prefetch_host.size(), 1) * sizeof(jit::PersistentRange);
    if (copy_table.size() < copy_bytes)
      copy_table = jit::DeviceBuffer(p.device(), copy_bytes, "the persistent kernel's copies");
    if (prefetch_table.size() < prefetch_bytes)
      prefetch_table = jit::DeviceBuffer(p.device(), prefetch_bytes, "the persistent kernel's prefetches");
    if (!copies_host.empty())
      copy_table.copy_from_host(copies_host.data(), copies_host.size() * sizeof(jit::PersistentCopy),
                                p.stream());
    if (!prefetch_host.empty())
      prefetch_table.copy_from_host(prefetch_host.data(), prefetch_host.size() * sizeof(jit::PersistentRange),
                                    p.stream());
  }
};

MonoExecutor::MonoExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control)
    : Executor(std::move(program), control) {
  for (const scheduler::Step& s : program_->plan().steps)
    if (s.kind == scheduler::Step::Kind::Loop)
      throw Error(ErrorCode::Unsupported, "the mono executor runs entries without device loops; " +
                                              program_->function().name + " has one (" +
                                              program_->where(s.op) + "): use --executor graph");
  impl_ = std::make_unique<Impl>(*program_);
  decoder_ = DecoderPlan::create(*program_, decoder_why_);
}

MonoExecutor::~MonoExecutor() = default;

bool MonoExecutor::takes_decoder_plan(const std::vector<Tensor>& inputs) {
  accepted_ = decoder_ && decoder_->accepts(inputs, decoder_why_);
  return accepted_;
}

std::vector<Tensor> MonoExecutor::run(const std::vector<Tensor>& inputs,
                                      const std::map<std::string, int64_t>& dims) {
  DeviceProgram& p = *program_;
  p.device().make_current();
  stats_.kernels = stats_.host_syncs = stats_.copies = stats_.graph_launches = 0;
  // The decoder plan where the entry and this run's inputs fit it (its first run builds it).
  const bool decoder =
      std::exchange(accepted_, false) || (decoder_ && decoder_->accepts(inputs, decoder_why_));
  stats_.plan = decoder ? "decoder" : "general (" + decoder_why_ + ")";
  impl_->start.record(p.stream());
  stats_.param_uploads = bind(inputs, dims) ? 1 : 0;
  p.upload_inputs(inputs);
  std::vector<Tensor> out;
  try {
    if (decoder) {
      control_.check();
      decoder_->launch();
      stats_.plan = "decoder (pace " + std::to_string(decoder_->pace()) + " ns)";
      stats_.kernels = 1;
      stats_.host_syncs = decoder_->position_is_state() ? 1 : 0;  // the position read back
      out = p.download_outputs();
      impl_->stop.record(p.stream());
      impl_->stop.synchronize();
      stats_.device_ms = impl_->stop.elapsed_ms_since(impl_->start);
      stats_.device_bytes = p.device_bytes() + decoder_->device_bytes();
      return out;
    }
    impl_->prepare();
    const Impl::Built& k = *impl_->kernel;
    // Nothing has been launched yet: an interrupt or the deadline stops the run with the states
    // as they were (the kernel itself runs to its end).
    control_.check();
    jit::PersistentParams pp{};
    pp.kernel = reinterpret_cast<const jit::KParams*>(p.device_blocks());
    pp.copy = reinterpret_cast<const jit::PersistentCopy*>(impl_->copy_table.ptr());
    pp.prefetch = reinterpret_cast<const jit::PersistentRange*>(impl_->prefetch_table.ptr());
    pp.trace = impl_->trace_start(impl_->steps);
    pp.barrier = reinterpret_cast<unsigned int*>(impl_->barrier.ptr());
    void* args[] = {&pp};
    jit::check(jit::driver().cuLaunchCooperativeKernel(k.function, k.grid, 1, 1,
                                                       static_cast<unsigned>(impl_->threads), 1, 1,
                                                       k.shared_bytes, p.stream(), args),
               "cuLaunchCooperativeKernel", "the persistent kernel of " + p.function().name);
    stats_.kernels = 1;
    stats_.copies = static_cast<int64_t>(impl_->copies);
    out = p.download_outputs();
    impl_->trace_write(impl_->steps);
  } catch (...) {
    try {
      p.device().synchronize();
    } catch (const Error&) {
    }
    throw;
  }
  impl_->stop.record(p.stream());
  impl_->stop.synchronize();
  stats_.device_ms = impl_->stop.elapsed_ms_since(impl_->start);
  stats_.device_bytes = p.device_bytes() + (decoder_ ? decoder_->device_bytes() : 0);
  return out;
}

}  // namespace grape::cuda
