#include "runtime/cuda/eager_executor.h"

#include <algorithm>

#include "jit/cuda_driver.h"
#include "runtime/cuda/device_program.h"
#include "base/error.h"

namespace grape::cuda {

struct EagerExecutor::Impl {
  DeviceProgram& p;
  RunStats& stats;
  const RunControl& control;
  jit::Event start, stop;
  jit::PinnedBuffer flag;  // a loop condition read back to the host

  Impl(DeviceProgram& program, RunStats& s, const RunControl& c)
      : p(program),
        stats(s),
        control(c),
        start(p.device()),
        stop(p.device()),
        flag(p.device(), 16, "a loop condition") {}

  bool read_bool(int storage, const ir::Operation* op) {
    auto* host = static_cast<unsigned char*>(flag.data());
    jit::check(jit::driver().cuMemcpyDtoHAsync(host, p.address(storage), 1, p.stream()), "cuMemcpyDtoHAsync",
               "the condition of the loop " + p.where(op));
    jit::check(jit::driver().cuStreamSynchronize(p.stream()), "cuStreamSynchronize", "a loop condition");
    ++stats.host_syncs;
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
                std::string(s.why) + " (" + p.where(s.op) + ")");
    ++stats.kernels;
  }

  void launch(size_t k) {
    const DeviceProgram::Launch& l = p.launch(k);
    void* args[] = {const_cast<jit::KParams*>(l.params)};  // by value: the driver copies it now
    jit::launch(l.function, jit::Dim3{l.grid, 1, 1}, jit::Dim3{l.block, 1, 1}, l.shared_bytes, p.stream(),
                args, p.kernel_label(k));
    ++stats.kernels;
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
  impl_->start.record(p.stream());
  stats_.param_uploads = p.bind(dims) ? 1 : 0;
  p.upload_inputs(inputs);
  std::vector<Tensor> out;
  try {
    // An interrupt or the deadline stops the run only before its commit phase (the steps from the
    // first that writes a state on), so a stopped run leaves the states as they were.
    const std::vector<scheduler::Step>& top = p.plan().steps;
    size_t commit = std::min(p.plan().first_state_write, top.size());
    impl_->steps(top, 0, commit, true);
    control_.check();
    impl_->steps(top, commit, top.size(), false);
    out = p.download_outputs();
  } catch (...) {
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
  stats_.device_bytes = p.device_bytes();
  return out;
}

}  // namespace grape::cuda
