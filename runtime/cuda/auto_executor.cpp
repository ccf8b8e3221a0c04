#include "runtime/cuda/auto_executor.h"

#include "base/error.h"
#include "jit/cuda_driver.h"
#include "runtime/cuda/device_program.h"
#include "runtime/cuda/eager_executor.h"
#include "runtime/cuda/graph_executor.h"
#include "runtime/cuda/mono_executor.h"
#include "scheduler/decoder_pattern.h"

namespace grape::cuda {

AutoExecutor::AutoExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control,
                           const GraphOptions& graph, AutoSchedule schedule)
    : Executor(std::move(program), control), policy_(schedule) {
  eager_ = std::make_unique<EagerExecutor>(program_, control_);
  try {
    graph_ = std::make_unique<GraphExecutor>(program_, control_, graph);
  } catch (const Error& e) {
    // A driver without conditional graph nodes: the session still runs, eager.
    if (e.code() != ErrorCode::Unsupported) throw;
    policy_.graph_unavailable(e.what());
  }
  std::string not_a_step;
  if (scheduler::match_decoder_step(program_->function(), not_a_step)) {
    decoder_ = std::make_unique<MonoExecutor>(program_, control_);
    if (!decoder_->has_decoder_plan()) decoder_.reset();  // other widths, an older GPU, ...
  }
  start_ = std::make_unique<jit::Event>(program_->device());
  stop_ = std::make_unique<jit::Event>(program_->device());
  take_stats(*eager_);
  last_ = "auto";
}

AutoExecutor::~AutoExecutor() = default;

void AutoExecutor::take_stats(const Executor& ran) {
  stats_ = ran.stats();
  stats_.graphs = graph_ ? graph_->stats().graphs : 0;
  stats_.graph_build_ms = graph_ ? graph_->stats().graph_build_ms : 0;
  stats_.graph_bytes = graph_ ? graph_->stats().graph_bytes : 0;
  last_ = ran.name();
}

// The start event is recorded on the idle stream (every run ends synchronised), so the time runs
// from the call's start on the host: host work before the first stream operation (a graph
// rebuilt because an address changed) counts, as the gaps between eager's launches do.
double AutoExecutor::timed_run(Executor& e, const std::vector<Tensor>& inputs,
                               const std::map<std::string, int64_t>& dims, std::vector<Tensor>& out) {
  program_->device().make_current();
  start_->record(program_->stream());
  out = e.run(inputs, dims);
  stop_->record(program_->stream());
  stop_->synchronize();
  return stop_->elapsed_ms_since(*start_);
}

std::vector<Tensor> AutoExecutor::run(const std::vector<Tensor>& inputs,
                                      const std::map<std::string, int64_t>& dims) {
  const std::string bucket = program_->buckets().key(dims);
  if (decoder_ && !profiling_ && decoder_->takes_decoder_plan(inputs)) {
    std::vector<Tensor> out = decoder_->run(inputs, dims);
    take_stats(*decoder_);
    state_ = "mono (the decoder plan takes this call; eager and graph are measured on the others)";
    return out;
  }
  Pick pick = profiling_ ? Pick::Eager : policy_.next(bucket);
  if (pick == Pick::Graph && !graph_) pick = Pick::Eager;  // the policy says so already
  auto fail = [&](const Executor& ran) {
    take_stats(ran);
    state_ = policy_.decision(bucket).summary();
  };
  std::vector<Tensor> out;
  double ms = 0;
  std::string graph_failure;  // a failure of the graph executor before its launch
  if (pick == Pick::Graph) {
    try {
      ms = timed_run(*graph_, inputs, dims, out);
    } catch (const Error& e) {
      // A launched graph may have written states, and an interrupt or a deadline is the
      // caller's: those fail the call. Before its launch the graph executor has changed nothing
      // a run reads (it bound the shared parameter blocks, as eager does again, and may have
      // queued the inputs, which eager copies again), so the call goes to eager.
      if (e.code() == ErrorCode::Interrupted || graph_->stats().graph_launches > 0) {
        fail(*graph_);
        throw;
      }
      if (e.code() == ErrorCode::Unsupported) {  // it refuses the program: for good
        policy_.graph_unavailable(e.what());
        graph_.reset();
      } else {
        graph_failure = e.what();
      }
      // The parameter upload that attempt queued reads pinned memory the next bind may rewrite.
      program_->device().synchronize();
      pick = Pick::Eager;
    }
  }
  if (pick == Pick::Eager) {
    try {
      ms = timed_run(*eager_, inputs, dims, out);
    } catch (...) {
      // Eager failed as well: the failure was not the graph executor's (an arena too large for
      // the device, say), so the bucket goes on measuring.
      fail(*eager_);
      throw;
    }
  }
  if (!graph_failure.empty()) policy_.graph_failed(bucket, graph_failure);
  take_stats(pick == Pick::Graph ? static_cast<const Executor&>(*graph_) : *eager_);
  if (profiling_)
    policy_.record_unmeasured(bucket);
  else
    policy_.record(bucket, pick, ms);
  state_ = policy_.decision(bucket).summary();
  return out;
}

void AutoExecutor::set_profiling(bool on) {
  eager_->set_profiling(on);
  profiling_ = on;
}

ProfileReport AutoExecutor::profile() const { return eager_->profile(); }

}  // namespace grape::cuda
