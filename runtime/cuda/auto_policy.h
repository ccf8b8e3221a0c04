// The decision logic of the CUDA executor "auto" (runtime/cuda/auto_executor.h), with no CUDA in
// it: fed the device time of each call, it says which executor runs the next call of a shape
// bucket. Programs have state that every call mutates (a KV cache), so nothing may run twice to be
// timed: the measurement uses the first real calls of a bucket, which alternate between the two
// executors (both compute the same results):
//
//   call      1      2      3     4     5     6     7     8    | 9 ...
//   runs      eager  graph  eager graph eager graph eager graph | the faster
//   timed     no     no     yes   yes   yes   yes   yes   yes   |
//
// The first call of each is not timed (it binds the arena and uploads the parameter blocks;
// the graph executor builds, instantiates and uploads its graph). The medians of the timed calls
// decide: graph only when its median is more than `margin` below eager's, so a tie, or a
// difference inside the noise, keeps eager, which holds no graph memory and needs no graph
// rebuilt when addresses change. The decision is kept for the session.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/auto_decision.h"

namespace grape::cuda {

enum class Pick { Eager, Graph };
const char* pick_name(Pick p);  // "eager", "graph"

struct AutoSchedule {
  int warmup_calls = 1;  // untimed calls per executor, first
  int timed_calls = 3;   // timed calls per executor, then; their medians decide
  double margin = 0.02;  // graph wins only when its median is below (1 - margin) x eager's
  int calls_to_decide() const { return 2 * (warmup_calls + timed_calls); }
};

class AutoPolicy {
 public:
  explicit AutoPolicy(AutoSchedule schedule = {});

  // The executor for the next call of `bucket`; a bucket seen for the first time starts measuring.
  Pick next(const std::string& bucket);
  // A call of `bucket` ran on `ran` and took `device_ms` (CUDA events). A call on the other
  // executor than the one the schedule asked for, or a time that is not a finite non-negative
  // number, counts as a call but not towards the decision (the scheduled executor runs again).
  void record(const std::string& bucket, Pick ran, double device_ms);
  // A call of `bucket` whose time must not count (kernel profiling was on: it forces eager and
  // stretches the call's time).
  void record_unmeasured(const std::string& bucket);
  // The graph executor cannot run this session (a driver without conditional graph nodes, or it
  // refused the program): every bucket, decided or not, runs eager from now on, `why` as reason.
  void graph_unavailable(const std::string& why);
  // The graph executor failed for `bucket` before launching anything: that bucket runs eager.
  void graph_failed(const std::string& bucket, const std::string& why);

  bool graph_available() const { return no_graph_.empty(); }
  const AutoSchedule& schedule() const { return schedule_; }
  // The report of one bucket (a bucket never seen: measuring, no calls); every bucket seen, in
  // the order of their first calls.
  AutoDecision decision(const std::string& bucket) const;
  std::vector<AutoDecision> decisions() const;

 private:
  struct Bucket {
    int64_t calls = 0;
    int step = 0;  // calls counted by the schedule
    std::vector<double> eager_ms, graph_ms;
    bool decided = false;
    Pick choice = Pick::Eager;
    std::string reason;
  };
  Bucket& at(const std::string& bucket);
  Pick scheduled(const Bucket& b) const;
  void decide(Bucket& b) const;
  AutoDecision report(const std::string& name, const Bucket& b) const;

  AutoSchedule schedule_;
  std::map<std::string, Bucket> buckets_;
  std::vector<std::string> order_;  // buckets in the order of their first calls
  std::string no_graph_;            // why the graph executor is unavailable ("" while it is)
};

}  // namespace grape::cuda
