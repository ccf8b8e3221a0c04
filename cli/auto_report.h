// `grape bench` with executor "auto": what it decided per shape bucket and the timed calls behind
// each decision (text and --json), through grp_session_auto_decisions.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "grape.h"

namespace grape::cli {

// One bucket of grp_auto_decision, its strings and arrays copied.
struct AutoBucket {
  std::string bucket, executor, reason;
  int64_t calls = 0, measured_calls = 0, calls_to_decide = 0;
  std::vector<double> eager_ms, graph_ms;
  double eager_median_ms = 0, graph_median_ms = 0;
};

// Empty for an executor other than "auto" and on the CPU backend.
std::vector<AutoBucket> auto_decisions(grp_session* s);

// The calls that counted towards the decisions, all buckets together.
int64_t measured_calls(const std::vector<AutoBucket>& buckets);

// "[{\"bucket\": ..., \"executor\": ..., ...}, ...]"
std::string auto_json(const std::vector<AutoBucket>& buckets);
// Two lines per bucket: the decision and the timed calls.
void print_auto(const std::vector<AutoBucket>& buckets);

}  // namespace grape::cli
