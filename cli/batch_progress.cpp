#include "cli/batch_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "cli/api.h"

namespace grape::cli {

void BatchCounters::add_batch(double ms, size_t batch_rows) {
  std::lock_guard<std::mutex> lock(mu);
  batch_ms.push_back(ms);
  batches += 1;
  rows += batch_rows;
}

ProgressLine::ProgressLine(const BatchCounters& c, bool enabled)
    : c_(c), enabled_(enabled && ::isatty(STDERR_FILENO)), start_(std::chrono::steady_clock::now()) {
  if (enabled_) thread_ = std::thread([this] { loop(); });
}

ProgressLine::~ProgressLine() { stop(); }

void ProgressLine::set_total(size_t total, bool approximate) {
  total_ = total;
  approximate_ = approximate;
}

void ProgressLine::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
    draw();  // the final count, even for a run shorter than one redraw
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

void ProgressLine::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(250), [this] { return stopping_; })) draw();
}

void ProgressLine::draw() {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  size_t done = c_.done, failed = c_.failed, total = total_;
  double rate = secs > 0 ? static_cast<double>(done) / secs : 0;
  char line[160];
  int n = std::snprintf(line, sizeof line, "\r\033[Kgrape batch: %zu", done);
  if (total)
    n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), "/%s%zu", approximate_ ? "~" : "",
                       total);
  n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), " requests  %.1f req/s", rate);
  if (total && rate > 0 && total > done) {
    auto eta = static_cast<long>(static_cast<double>(total - done) / rate);
    n += std::snprintf(line + n, sizeof line - static_cast<size_t>(n), "  ETA %ld:%02ld", eta / 60, eta % 60);
  }
  if (failed) std::snprintf(line + n, sizeof line - static_cast<size_t>(n), "  %zu failed", failed);
  std::fputs(line, stderr);
  std::fflush(stderr);
}

BatchSummary summarize(BatchCounters& c, double seconds) {
  BatchSummary s;
  std::vector<double> ms;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    ms = c.batch_ms;
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double q) {
    return ms.empty() ? 0.0
                      : ms[std::min(ms.size() - 1,
                                    static_cast<size_t>(q * static_cast<double>(ms.size() - 1) + 0.5))];
  };
  s.p50_ms = pct(0.5);
  s.p99_ms = pct(0.99);
  s.failed = c.failed;
  s.ok = c.done - s.failed;
  s.batches = c.batches;
  s.rows = c.rows;
  s.seconds = seconds;
  return s;
}

std::string summary_text(const BatchSummary& s) {
  char buf[4608];
  double rate = s.seconds > 0 ? static_cast<double>(s.ok + s.failed) / s.seconds : 0;
  std::snprintf(buf, sizeof buf,
                "grape batch: %zu requests (%zu ok, %zu failed%s) in %.2f s after %.2f s to start, %.1f "
                "req/s; %zu call%s "
                "of %.1f rows "
                "on average, latency per call p50 %.3f ms p99 %.3f ms; %zu session%s on %s; %zu already done "
                "(resumed)\n  results: %s\n",
                s.ok + s.failed, s.ok, s.failed, s.interrupted ? ", interrupted" : "", s.seconds,
                s.startup_seconds, rate, s.batches, s.batches == 1 ? "" : "s",
                s.batches ? static_cast<double>(s.rows) / static_cast<double>(s.batches) : 0.0, s.p50_ms,
                s.p99_ms, s.sessions, s.sessions == 1 ? "" : "s", s.backend.c_str(), s.resumed,
                s.results.c_str());
  return buf;
}

std::string summary_json(const BatchSummary& s) {
  char buf[4608];
  double rate = s.seconds > 0 ? static_cast<double>(s.ok + s.failed) / s.seconds : 0;
  char warmup_buf[32];
  std::snprintf(warmup_buf, sizeof warmup_buf, "%.6f", s.warmup_seconds);
  const std::string warmup = s.warmup_seconds < 0 ? "null" : warmup_buf;
  std::snprintf(buf, sizeof buf,
                "{\"requests\": %zu, \"ok\": %zu, \"failed\": %zu, \"resumed\": %zu, \"interrupted\": %s, "
                "\"seconds\": %.6f, \"startup_seconds\": %.6f, \"warmup_seconds\": %s, \"requests_per_s\": "
                "%.3f, \"batches\": %zu, "
                "\"rows\": %zu, "
                "\"batch_p50_ms\": %.6f, \"batch_p99_ms\": %.6f, \"sessions\": %zu, \"backend\": %s, "
                "\"results\": %s}\n",
                s.ok + s.failed, s.ok, s.failed, s.resumed, s.interrupted ? "true" : "false", s.seconds,
                s.startup_seconds, warmup.c_str(), rate, s.batches, s.rows, s.p50_ms, s.p99_ms, s.sessions,
                json_string(s.backend).c_str(), json_string(s.results).c_str());
  return buf;
}

}  // namespace grape::cli
