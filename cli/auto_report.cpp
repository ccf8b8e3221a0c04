#include "cli/auto_report.h"

#include <cstdio>
#include <cstring>

#include "cli/api.h"

namespace grape::cli {
namespace {

std::string list_ms(const std::vector<double>& v, const char* sep) {
  std::string out;
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.3f", i ? sep : "", v[i]);
    out += buf;
  }
  return out;
}

}  // namespace

std::vector<AutoBucket> auto_decisions(grp_session* s) {
  size_t count = 0;
  check(grp_session_auto_decisions(s, &count));
  std::vector<AutoBucket> out;
  for (size_t i = 0; i < count; ++i) {
    grp_auto_decision d;
    std::memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    check(grp_session_auto_decision_at(s, i, &d));
    AutoBucket b;
    b.bucket = d.bucket;
    b.executor = d.executor;
    b.reason = d.reason;
    b.calls = d.calls;
    b.measured_calls = d.measured_calls;
    b.calls_to_decide = d.calls_to_decide;
    b.eager_ms.assign(d.eager_ms, d.eager_ms + d.eager_count);
    b.graph_ms.assign(d.graph_ms, d.graph_ms + d.graph_count);
    b.eager_median_ms = d.eager_median_ms;
    b.graph_median_ms = d.graph_median_ms;
    out.push_back(std::move(b));
  }
  return out;
}

int64_t measured_calls(const std::vector<AutoBucket>& buckets) {
  int64_t n = 0;
  for (const AutoBucket& b : buckets) n += b.measured_calls;
  return n;
}

std::string auto_json(const std::vector<AutoBucket>& buckets) {
  std::string j = "[";
  char buf[256];
  for (size_t i = 0; i < buckets.size(); ++i) {
    const AutoBucket& b = buckets[i];
    std::snprintf(buf, sizeof buf,
                  "\"calls\": %lld, \"measured_calls\": %lld, \"calls_to_decide\": %lld, "
                  "\"eager_median_ms\": %.6f, \"graph_median_ms\": %.6f, ",
                  static_cast<long long>(b.calls), static_cast<long long>(b.measured_calls),
                  static_cast<long long>(b.calls_to_decide), b.eager_median_ms, b.graph_median_ms);
    j += std::string(i ? ", " : "") + "{\"bucket\": " + json_string(b.bucket) +
         ", \"executor\": " + json_string(b.executor) + ", \"reason\": " + json_string(b.reason) + ", " +
         buf + "\"eager_ms\": [" + list_ms(b.eager_ms, ", ") + "], \"graph_ms\": [" +
         list_ms(b.graph_ms, ", ") + "]}";
  }
  return j + "]";
}

void print_auto(const std::vector<AutoBucket>& buckets) {
  for (const AutoBucket& b : buckets) {
    std::string bucket = b.bucket.empty() ? "(no symbolic dims)" : b.bucket;
    if (b.executor.empty())
      std::printf("  auto, %s: measuring (%lld of %lld calls)\n", bucket.c_str(),
                  static_cast<long long>(b.measured_calls), static_cast<long long>(b.calls_to_decide));
    else
      std::printf("  auto, %s: %s (%s)\n", bucket.c_str(), b.executor.c_str(), b.reason.c_str());
    if (!b.eager_ms.empty() || !b.graph_ms.empty())
      std::printf("    timed calls, device ms: eager %s; graph %s\n", list_ms(b.eager_ms, " ").c_str(),
                  list_ms(b.graph_ms, " ").c_str());
  }
}

}  // namespace grape::cli
