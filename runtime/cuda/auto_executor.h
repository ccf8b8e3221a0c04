// The executor "auto" (the default): selective execution, PyGraph's idea. It holds an eager and a
// graph executor over the one DeviceProgram of the session (weights, states, arena, parameter
// blocks: nothing copied) and, per shape bucket, runs the first calls on both in turn, timed with
// CUDA events, then keeps the faster for the session (the decision logic: auto_policy.h). Every
// call is a real call with correct results whichever executor runs it, so programs with state
// need no extra runs. Switching between the two between calls is safe because each run begins by
// binding the shared program (its parameter blocks are uploaded only when they differ from what
// the device holds, whoever uploaded them) and ends with the stream synchronised, and neither
// executor keeps device data of its own that a later run reads before writing it, except the
// graph executor's instantiated graphs, which it checks against the current blocks before each
// launch (docs/execution.md, "Selective execution"). An entry that is a GPT-2 small decode step
// also has the mono executor's decoder plan: a call that plan takes runs it (2.0-2.7 times faster
// than graph where measured), and auto measures eager against graph for the other calls.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "runtime/auto_decision.h"
#include "runtime/cuda/auto_policy.h"
#include "runtime/cuda/executor.h"

namespace grape::jit {
class Event;
}

namespace grape::cuda {

class EagerExecutor;
class GraphExecutor;
class MonoExecutor;

class AutoExecutor : public Executor {
 public:
  // Without a driver that has conditional graph nodes every call runs eager (the reason is in
  // the decisions).
  // `graph`: the graph executor's options. Auto decides per bucket of the program's buckets.
  AutoExecutor(std::shared_ptr<DeviceProgram> program, const RunControl& control,
               const GraphOptions& graph = {}, AutoSchedule schedule = {});
  ~AutoExecutor() override;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs,
                          const std::map<std::string, int64_t>& dims) override;
  const char* name() const override { return "auto"; }
  const char* last_executor() const override { return last_; }
  std::vector<AutoDecision> auto_decisions() const override { return policy_.decisions(); }
  std::string auto_state() const override { return state_; }
  // Kernel profiles are measured by the eager executor: while profiling is on every call runs
  // eager and none counts towards a decision (the profiling gate changes a call's time).
  void set_profiling(bool on) override;
  ProfileReport profile() const override;

 private:
  // The run's statistics are those of the executor that ran it, with the graphs the graph
  // executor holds.
  void take_stats(const Executor& ran);
  // Runs the call on eager or graph between this executor's own events; returns its time.
  double timed_run(Executor& e, const std::vector<Tensor>& inputs, const std::map<std::string, int64_t>& dims,
                   std::vector<Tensor>& out);

  std::unique_ptr<EagerExecutor> eager_;
  std::unique_ptr<GraphExecutor> graph_;  // null when unavailable
  // The mono executor, only for an entry its decoder plan runs (a GPT-2 small decode step): a
  // call that plan takes runs there, unmeasured (docs/execution.md, "The decoder plan"); null
  // otherwise.
  std::unique_ptr<MonoExecutor> decoder_;
  // Around every call, whichever executor runs it: the executors' own device_ms differ in what
  // they cover (eager's includes the parameter upload, graph's starts after it and after
  // building its graph), and the two being compared must cover the same.
  std::unique_ptr<jit::Event> start_, stop_;
  AutoPolicy policy_;
  bool profiling_ = false;
  const char* last_ = "auto";  // the executor of the last run ("auto" before the first)
  std::string state_;          // the decision of the last run's bucket, AutoDecision::summary()
};

}  // namespace grape::cuda
