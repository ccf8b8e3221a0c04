// What the CUDA executor "auto" decided for one shape bucket of a session's entry: which of the
// eager and graph executors it keeps, from the device times of the calls it measured
// (runtime/cuda/auto_policy.h; docs/execution.md, "Selective execution"). Plain data, so that
// Session (runtime/model.h), the C API and `grape bench` can report it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace grape {

struct AutoDecision {
  std::string bucket;    // the dims the bucket stands for, "B=2, S=4"; "" for an entry without symbolic dims
  std::string executor;  // "eager" or "graph" once decided; "" while still measuring
  // Why that executor, one line ("graph 0.740 ms vs eager 0.890 ms, medians of 3 timed calls
  // each", "the graph executor is unavailable: ..."); "" while measuring.
  std::string reason;
  int64_t calls = 0;  // calls of the bucket so far
  // Calls that counted towards the decision (a call while kernel profiling is on does not), and
  // how many it takes: the decision holds from the call after the last of them.
  int64_t measured_calls = 0, calls_to_decide = 0;
  std::vector<double> eager_ms, graph_ms;           // device time of each timed call, in call order
  double eager_median_ms = 0, graph_median_ms = 0;  // medians of those; 0 before the first

  // One line: "graph (graph 0.740 ms vs eager 0.890 ms, ...)", or while measuring
  // "measuring (3 of 8 calls)".
  std::string summary() const {
    if (executor.empty())
      return "measuring (" + std::to_string(measured_calls) + " of " + std::to_string(calls_to_decide) +
             " calls)";
    return executor + " (" + reason + ")";
  }
};

}  // namespace grape
