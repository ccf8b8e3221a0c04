#include "runtime/cuda/auto_policy.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace grape::cuda {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string ms(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", x);
  return buf;
}

}  // namespace

const char* pick_name(Pick p) { return p == Pick::Graph ? "graph" : "eager"; }

AutoPolicy::AutoPolicy(AutoSchedule schedule) : schedule_(schedule) {
  // A schedule without timed calls could not decide anything; without warm-up it is allowed.
  schedule_.warmup_calls = std::max(0, schedule_.warmup_calls);
  schedule_.timed_calls = std::max(1, schedule_.timed_calls);
}

AutoPolicy::Bucket& AutoPolicy::at(const std::string& bucket) {
  auto [it, fresh] = buckets_.try_emplace(bucket);
  if (fresh) {
    order_.push_back(bucket);
    if (!no_graph_.empty()) {
      it->second.decided = true;
      it->second.reason = no_graph_;
    }
  }
  return it->second;
}

// Eager first, then alternating: a drift over the first calls (clocks ramping up, caches
// warming) then hits both executors alike.
Pick AutoPolicy::scheduled(const Bucket& b) const { return b.step % 2 == 0 ? Pick::Eager : Pick::Graph; }

Pick AutoPolicy::next(const std::string& bucket) {
  Bucket& b = at(bucket);
  return b.decided ? b.choice : scheduled(b);
}

void AutoPolicy::record(const std::string& bucket, Pick ran, double device_ms) {
  Bucket& b = at(bucket);
  ++b.calls;
  if (b.decided || ran != scheduled(b)) return;
  if (b.step >= 2 * schedule_.warmup_calls) {
    // A time that cannot be compared is dropped: the same executor runs (and is timed) again.
    if (!std::isfinite(device_ms) || device_ms < 0) return;
    (ran == Pick::Eager ? b.eager_ms : b.graph_ms).push_back(device_ms);
  }
  if (++b.step == schedule_.calls_to_decide()) decide(b);
}

void AutoPolicy::record_unmeasured(const std::string& bucket) { ++at(bucket).calls; }

void AutoPolicy::decide(Bucket& b) const {
  const double eager = median(b.eager_ms), graph = median(b.graph_ms);
  const std::string of = ", medians of " + std::to_string(schedule_.timed_calls) + " timed calls each";
  b.decided = true;
  if (graph < eager * (1 - schedule_.margin)) {
    b.choice = Pick::Graph;
    b.reason = "graph " + ms(graph) + " vs eager " + ms(eager) + of;
  } else {
    char margin[32];
    std::snprintf(margin, sizeof margin, "%g%%", schedule_.margin * 100);
    b.choice = Pick::Eager;
    b.reason = "eager " + ms(eager) + " vs graph " + ms(graph) + of + "; graph must be " + margin + " faster";
  }
}

void AutoPolicy::graph_unavailable(const std::string& why) {
  no_graph_ = "the graph executor is unavailable: " + why;
  for (auto& [name, b] : buckets_) {
    b.decided = true;
    b.choice = Pick::Eager;
    b.reason = no_graph_;
  }
}

void AutoPolicy::graph_failed(const std::string& bucket, const std::string& why) {
  Bucket& b = at(bucket);
  b.decided = true;
  b.choice = Pick::Eager;
  b.reason = "the graph executor failed: " + why;
}

AutoDecision AutoPolicy::report(const std::string& name, const Bucket& b) const {
  AutoDecision d;
  d.bucket = name;
  d.executor = b.decided ? pick_name(b.choice) : "";
  d.reason = b.decided ? b.reason : "";
  d.calls = b.calls;
  d.measured_calls = b.step;
  d.calls_to_decide = schedule_.calls_to_decide();
  d.eager_ms = b.eager_ms;
  d.graph_ms = b.graph_ms;
  d.eager_median_ms = median(b.eager_ms);
  d.graph_median_ms = median(b.graph_ms);
  return d;
}

AutoDecision AutoPolicy::decision(const std::string& bucket) const {
  auto it = buckets_.find(bucket);
  if (it != buckets_.end()) return report(bucket, it->second);
  Bucket fresh;
  if (!no_graph_.empty()) {
    fresh.decided = true;
    fresh.reason = no_graph_;
  }
  return report(bucket, fresh);
}

std::vector<AutoDecision> AutoPolicy::decisions() const {
  std::vector<AutoDecision> out;
  for (const auto& name : order_) out.push_back(report(name, buckets_.at(name)));
  return out;
}

}  // namespace grape::cuda
