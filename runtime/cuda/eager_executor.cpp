#include "runtime/cuda/eager_executor.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "base/error.h"
#include "jit/cuda_driver.h"
#include "runtime/cuda/device_program.h"
#include "runtime/cuda/kernel_cost.h"

namespace grape::cuda {

struct EagerExecutor::Impl {
  DeviceProgram& p;
  RunStats& stats;
  const RunControl& control;
  jit::Event start, stop;
  jit::PinnedBuffer flag;  // a loop condition read back to the host
  // Kernels launched with programmatic stream serialization (as the graph executor's programmatic
  // edges: every kernel waits for its predecessor first), on compute capability 9.0+ unless
  // GRAPE_EAGER_PDL=0; not while profiling, whose events time each kernel alone.
  bool programmatic = false;
  // Profiling: an event before and after each launch of a run (reused between runs), the kernels
  // launched in that order, and per kernel the launches and milliseconds collected so far.
  // The host enqueues a launch more slowly than most kernels run, so an event pair around a launch
  // would time the host's gap too. While profiling, the stream therefore first waits on a gate (a
  // value in pinned memory, cuStreamWaitValue32) that the host opens only when it has enqueued a
  // stretch of launches, or must synchronise: the GPU then runs them back to back.
  jit::PinnedBuffer gate;
  uint32_t gate_epoch = 0;
  bool gate_closed = false;
  size_t gated_launches = 0;
  bool profiling = false;
  std::vector<jit::Event> marks;
  std::vector<size_t> timed;
  std::vector<int64_t> launches;
  std::vector<double> total_ms;
  int64_t profiled_runs = 0;

  Impl(DeviceProgram& program, RunStats& s, const RunControl& c)
      : p(program),
        stats(s),
        control(c),
        start(p.device()),
        stop(p.device()),
        flag(p.device(), 16, "a loop condition"),
        gate(p.device(), 16, "the profiling gate") {
    *static_cast<volatile uint32_t*>(gate.data()) = 0;
    programmatic = programmatic_launch(p.device(), "GRAPE_EAGER_PDL");
  }

  // Gate: the stream waits until the host has written gate_epoch (only while profiling).
  void close_gate() {
    if (!profiling || gate_closed) return;
    ++gate_epoch;
    CUdeviceptr at = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(gate.data()));
    jit::check(jit::driver().cuStreamWaitValue32(p.stream(), at, gate_epoch, CU_STREAM_WAIT_VALUE_GEQ),
               "cuStreamWaitValue32", "the profiling gate");
    gate_closed = true;
    gated_launches = 0;
  }
  void open_gate() noexcept {
    if (!gate_closed) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile uint32_t*>(gate.data()) = gate_epoch;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    gate_closed = false;
  }

  bool read_bool(int storage, const ir::Operation* op) {
    open_gate();
    auto* host = static_cast<unsigned char*>(flag.data());
    jit::check(jit::driver().cuMemcpyDtoHAsync(host, p.address(storage), 1, p.stream()), "cuMemcpyDtoHAsync",
               "the condition of the loop " + p.where(op));
    jit::check(jit::driver().cuStreamSynchronize(p.stream()), "cuStreamSynchronize", "a loop condition");
    ++stats.host_syncs;
    close_gate();
    return *host != 0;
  }

  void copy(const scheduler::Step& s) {
    size_t bytes = p.bytes(s.dst);
    if (bytes == 0) return;
    CUdeviceptr dst = p.address(s.dst), src = p.address(s.src);
    ++stats.copies;
    if (s.pred == ir::kNoValue) {
      jit::check(jit::driver().cuMemcpyDtoDAsync(dst, src, bytes, p.stream()), "cuMemcpyDtoDAsync",
                 std::string(s.why) + " (" + p.where(s.op) + ")");
      return;
    }
    // A predicated copy (a state written under `if`): the device decides, no host read.
    CUdeviceptr pred = p.address(p.plan().storage(s.pred));
    unsigned long long n = bytes;
    void* args[] = {&dst, &src, &n, &pred};
    unsigned grid = static_cast<unsigned>(std::min<size_t>(1024, (bytes / 16 + 255) / 256 + 1));
    jit::launch(p.control().copy, jit::Dim3{grid, 1, 1}, jit::Dim3{256, 1, 1}, 0, p.stream(), args,
                std::string(s.why) + " (" + p.where(s.op) + ")", programmatic && !profiling);
    ++stats.kernels;
  }

  // Profiling: an event before a timed launch, and after it one that closes unit `unit` (a kernel,
  // or num_kernels() + q for block sequence q).
  void mark_before() {
    if (!profiling) return;
    while (marks.size() < 2 * timed.size() + 2) marks.emplace_back(p.device());
    marks[2 * timed.size()].record(p.stream());
  }
  void mark_after(size_t unit) {
    if (!profiling) return;
    marks[2 * timed.size() + 1].record(p.stream());
    timed.push_back(unit);
    // A stream holds only so much queued work before a launch blocks the host: let the GPU
    // catch up now and then, or a long program would wait on the gate forever.
    if (++gated_launches >= 128) {
      open_gate();
      close_gate();
    }
  }

  void launch(size_t k) {
    const DeviceProgram::Launch& l = p.launch(k);
    void* args[] = {const_cast<jit::KParams*>(l.params)};  // by value: the driver copies it now
    mark_before();
    jit::launch(l.function, jit::Dim3{l.grid, 1, 1}, jit::Dim3{l.block, 1, 1}, l.shared_bytes, p.stream(),
                args, p.kernel_label(k), programmatic && !profiling, static_cast<unsigned>(l.dims.cluster));
    mark_after(k);
    ++stats.kernels;
  }

  // A block sequence (scheduler/sequence.h): one block runs its steps.
  void launch_sequence(size_t q) {
    void* args[] = {const_cast<jit::SeqParams*>(&p.sequence_params(q))};  // by value
    mark_before();
    const unsigned threads = static_cast<unsigned>(p.sequence(q).threads);
    jit::launch(p.sequence_function(q), jit::Dim3{1, 1, 1}, jit::Dim3{threads, 1, 1},
                p.sequence_shared_bytes(q), p.stream(), args, p.sequence_label(q),
                programmatic && !profiling);
    mark_after(p.num_kernels() + q);
    ++stats.kernels;
  }

  // After the run's stream has synchronised: adds the timed launches to the totals.
  void collect() {
    if (!profiling) return;
    launches.resize(p.num_kernels() + p.num_sequences(), 0);
    total_ms.resize(p.num_kernels() + p.num_sequences(), 0.0);
    for (size_t i = 0; i < timed.size(); ++i) {
      ++launches[timed[i]];
      total_ms[timed[i]] += marks[2 * i + 1].elapsed_ms_since(marks[2 * i]);
    }
    timed.clear();
    ++profiled_runs;
  }

  // `stoppable`: the interrupt flag and the deadline are checked (not in the commit phase).
  void loop(const scheduler::LoopPlan& l, bool stoppable) {
    int64_t cap = l.max_trips >= 0 ? l.max_trips : control.max_loop_trips();
    int64_t trips = 0;
    bool go = read_bool(l.init_cond, l.op);
    while (go && trips < cap) {
      if (stoppable) control.check();  // once per trip: the host has just synchronised on the condition
      steps(l.body, 0, l.body.size(), stoppable);
      ++trips;
      go = read_bool(l.cond, l.op);
    }
    if (go && l.max_trips < 0) p.throw_loop_cap(l.op, control);
  }

  void steps(const std::vector<scheduler::Step>& list, size_t begin, size_t end, bool stoppable) {
    for (size_t i = begin; i < end; ++i) {
      const scheduler::Step& s = list[i];
      if (stoppable) control.check();
      if (const int q = p.sequence_at(list, i); q >= 0 && p.sequence(static_cast<size_t>(q)).end <= end) {
        launch_sequence(static_cast<size_t>(q));
        i = p.sequence(static_cast<size_t>(q)).end - 1;
        continue;
      }
      switch (s.kind) {
        case scheduler::Step::Kind::Launch: launch(s.index); break;
        case scheduler::Step::Kind::Copy: copy(s); break;
        case scheduler::Step::Kind::Loop: loop(p.plan().loops[s.index], stoppable); break;
      }
    }
  }
};

EagerExecutor::EagerExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control)
    : Executor(std::move(program), control), impl_(std::make_unique<Impl>(*program_, stats_, control_)) {}

EagerExecutor::~EagerExecutor() = default;

std::vector<Tensor> EagerExecutor::run(const std::vector<Tensor>& inputs,
                                       const std::map<std::string, int64_t>& dims) {
  DeviceProgram& p = *program_;
  p.device().make_current();
  stats_.kernels = stats_.host_syncs = stats_.copies = stats_.graph_launches = 0;
  impl_->timed.clear();
  impl_->start.record(p.stream());
  stats_.param_uploads = bind(inputs, dims) ? 1 : 0;
  p.upload_inputs(inputs);
  std::vector<Tensor> out;
  try {
    impl_->close_gate();
    // An interrupt or the deadline stops the run only before its commit phase (the steps from the
    // first that writes a state on), so a stopped run leaves the states as they were.
    const std::vector<scheduler::Step>& top = p.plan().steps;
    size_t commit = std::min(p.plan().first_state_write, top.size());
    impl_->steps(top, 0, commit, true);
    control_.check();
    impl_->steps(top, commit, top.size(), false);
    impl_->open_gate();
    out = p.download_outputs();
  } catch (...) {
    impl_->open_gate();
    // Nothing may still write the arena when the next run starts; a failed kernel makes this
    // throw too, and the first error is the one to report.
    try {
      p.device().synchronize();
    } catch (const Error&) {
    }
    throw;
  }
  impl_->stop.record(p.stream());
  impl_->stop.synchronize();
  stats_.device_ms = impl_->stop.elapsed_ms_since(impl_->start);
  impl_->collect();
  stats_.device_bytes = p.device_bytes();
  return out;
}

void EagerExecutor::set_profiling(bool on) {
  impl_->profiling = on;
  impl_->timed.clear();
  impl_->launches.clear();
  impl_->total_ms.clear();
  impl_->profiled_runs = 0;
}

ProfileReport EagerExecutor::profile() const {
  const DeviceProgram& p = *program_;
  ProfileReport r;
  r.runs = impl_->profiled_runs;
  for (size_t k = 0; k < impl_->launches.size(); ++k) {
    if (impl_->launches[k] == 0) continue;
    if (k >= p.num_kernels()) {  // a block sequence: one block, its kernels' costs together
      const scheduler::BlockSequence& q = p.sequence(k - p.num_kernels());
      KernelProfile kp;
      kp.name = p.sequence_label(k - p.num_kernels());
      kp.op = "sequence";
      kp.grid = 1;
      kp.block = static_cast<unsigned>(q.threads);
      kp.launches = impl_->launches[k];
      kp.total_ms = impl_->total_ms[k];
      for (size_t kernel : q.kernels) {
        const KernelCost c = kernel_cost(p.function(), p.spec(kernel), p.dims());
        kp.bytes += c.bytes;
        kp.flops += c.flops;
      }
      r.kernels.push_back(std::move(kp));
      continue;
    }
    const jit::KernelSpec& spec = p.spec(k);
    KernelProfile kp;
    kp.name = spec.name;
    kp.op = spec.root ? ir::op_name(spec.root->op) : "";
    if (spec.root) {
      const SourcePosition at = p.position(spec.root);
      if (!at.file.empty())
        kp.where = at.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
    }
    kp.grid = p.launch(k).grid;
    kp.block = p.launch(k).block;
    kp.launches = impl_->launches[k];
    kp.total_ms = impl_->total_ms[k];
    const KernelCost c = kernel_cost(p.function(), spec, p.dims());
    kp.bytes = c.bytes;
    kp.flops = c.flops;
    r.kernels.push_back(std::move(kp));
  }
  return r;
}

}  // namespace grape::cuda
