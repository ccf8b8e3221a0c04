// What `grape batch` tells a person: a one-line progress display on a terminal (done/total,
// requests/s, ETA, failures), redrawn a few times a second and absent when stderr is not a TTY;
// and the final summary, as text or as one JSON object.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace grape::cli {

// Shared by the workers, the reader and the display.
struct BatchCounters {
  std::atomic<size_t> done{0};     // requests finished in this run, ok or not
  std::atomic<size_t> failed{0};   // of them, with status error
  std::atomic<size_t> batches{0};  // calls that succeeded
  std::atomic<size_t> rows{0};     // rows in those calls
  std::mutex mu;
  std::vector<double> batch_ms;  // latency of each successful call

  void add_batch(double ms, size_t batch_rows);
};

class ProgressLine {
 public:
  // total: the requests expected in this run (0: unknown); approximate marks it with "~".
  ProgressLine(const BatchCounters& c, bool enabled);
  ~ProgressLine();
  void set_total(size_t total, bool approximate);
  // Whether the line is drawn (a terminal, not --quiet): the total is worth counting only then.
  bool enabled() const { return enabled_; }
  // Clears the line and stops redrawing.
  void stop();

 private:
  void loop();
  void draw();

  const BatchCounters& c_;
  bool enabled_;
  std::atomic<size_t> total_{0};
  std::atomic<bool> approximate_{false};
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

struct BatchSummary {
  size_t requests = 0;  // in this run (after --shard and --resume)
  size_t resumed = 0;   // skipped: already in results.jsonl
  size_t ok = 0, failed = 0, batches = 0, rows = 0;
  double seconds = 0;          // from the first request read to the last result written
  double startup_seconds = 0;  // loading the program and weights, opening the sessions, the warm-up
  double warmup_seconds = -1;  // of startup_seconds, the warm-up call (-1: none ran)
  double p50_ms = 0, p99_ms = 0;
  size_t sessions = 0;
  std::string backend;
  bool interrupted = false;
  std::string results;  // path of results.jsonl
};

BatchSummary summarize(BatchCounters& c, double seconds);
std::string summary_text(const BatchSummary& s);
std::string summary_json(const BatchSummary& s);

}  // namespace grape::cli
