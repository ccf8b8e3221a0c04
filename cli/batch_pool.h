// The workers of `grape batch`: one thread per session (sessions on every --devices device, and
// --threads of them per device), all taking calls from one shared queue. A call that fails is
// retried one request at a time, so that one bad request cannot fail its neighbours. A call's
// outputs are copied out of the session and turned into result lines by a few formatting threads,
// so that the session starts its next call at once (text for large outputs costs more than the
// call on a GPU). With --outputs npy-rows, each formatting thread writes the rows of the calls it
// finishes within half a second (up to 64 MB) to one file per output, fsynced once.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/api.h"
#include "cli/batch_npy.h"
#include "cli/batch_progress.h"
#include "cli/batch_results.h"
#include "cli/batch_stack.h"
#include "cli/interrupt.h"

namespace grape::cli {

// A bounded queue: the producer blocks when the consumers are behind, so requests are read only a
// little ahead of the calls. With `stop_on_ctrl_c`, Ctrl-C ends it at once (the calls not started
// are dropped); without, it is drained (the results of calls that ran are always written).
template <class T>
class BoundedQueue {
 public:
  BoundedQueue(size_t capacity, bool stop_on_ctrl_c) : capacity_(capacity), stop_on_ctrl_c_(stop_on_ctrl_c) {}
  // False when the queue was closed (the item is dropped).
  bool push(T item) {
    if (stopped()) return false;
    std::unique_lock<std::mutex> lock(mu_);
    // Wakes up now and then to notice Ctrl-C: a signal handler cannot notify.
    while (!not_full_.wait_for(lock, std::chrono::milliseconds(100),
                               [&] { return closed_ || q_.size() < capacity_; }))
      if (stopped()) return false;
    if (closed_ || stopped()) return false;
    q_.push_back(std::move(item));
    not_empty_.notify_one();
    return true;
  }
  // Nothing when the queue is closed and empty.
  std::optional<T> pop() {
    bool timed_out = false;
    return pop_until(std::chrono::steady_clock::time_point::max(), timed_out);
  }
  // The same, or nothing with timed_out set once `deadline` passed with the queue empty.
  std::optional<T> pop_until(std::chrono::steady_clock::time_point deadline, bool& timed_out) {
    timed_out = false;
    std::unique_lock<std::mutex> lock(mu_);
    auto ready = [&] { return closed_ || !q_.empty(); };
    // Wakes up at least every 100 ms to notice Ctrl-C.
    while (!ready()) {
      if (stopped()) return std::nullopt;
      auto now = std::chrono::steady_clock::now();
      if (now >= deadline) {
        timed_out = true;
        return std::nullopt;
      }
      not_empty_.wait_for(lock, std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(100),
                                                                              deadline - now));
    }
    if (stopped() || q_.empty()) return std::nullopt;
    T item = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return item;
  }
  // Whether close() was called (the consumers stopped, when the caller is the producer).
  bool closed() {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_;
  }
  void close() {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
    not_full_.notify_all();
  }

 private:
  bool stopped() const { return stop_on_ctrl_c_ && interrupted(); }

  size_t capacity_;
  bool stop_on_ctrl_c_;
  std::deque<T> q_;
  bool closed_ = false;
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
};

using BatchQueue = BoundedQueue<Batch>;

// Buffers for the outputs copied out of the sessions, handed back when their call is written:
// a fresh buffer of a few MB per call costs more in page faults and zeroing than the copy.
class BufferPool {
 public:
  // A copy of `n` bytes at `data`, which returns its buffer to the pool when the last owner goes.
  // The pool must outlive every copy.
  std::shared_ptr<const uint8_t> copy(const void* data, size_t n);

 private:
  std::mutex mu_;
  std::vector<std::unique_ptr<std::vector<uint8_t>>> free_;
};

class WorkerPool {
 public:
  // `formatters` threads turn outputs into result lines.
  WorkerPool(std::vector<SessionPtr> sessions, size_t formatters, const Signature& sig,
             const std::string& requests_file, ResultWriter& writer, BatchCounters& counters,
             BatchQueue& queue);
  ~WorkerPool();
  // Waits for the workers and the formatting threads; rethrows the first error that stopped one
  // (an unwritable result).
  void join();
  size_t size() const { return sessions_.size(); }

 private:
  // A finished call: its requests and its outputs, copied out of the session.
  struct Finished {
    Batch batch;
    double ms = 0;
    std::vector<HostTensor> outputs;
  };
  // --outputs npy-rows of a batchable entry: the calls a formatting thread finished lately, whose
  // rows go to one file per output (written as they come, fsynced once), and whose result lines
  // are appended when the files are in place. Fewer, larger files: one fsync for many calls.
  struct RowsGroup {
    std::vector<std::unique_ptr<NpyRowsFile>> files;  // one per output; empty: no group open
    std::vector<std::string> outputs;                 // ResultWriter::rows_output of each
    struct Call {
      Batch batch;
      double ms;
      int64_t row0;  // of the first request, in every file
    };
    std::vector<Call> calls;
    std::chrono::steady_clock::time_point opened;
    uint64_t bytes() const;
  };

  // GRAPE_BATCH_TRACE=FILE: one line per call (session, rows, and when it was taken from the
  // queue, its inputs were set, it ran, its outputs were copied out, in ms since the pool
  // started), written at join(); for finding where a run's time goes.
  struct CallTrace {
    size_t rows;
    double taken, inputs_set, ran, outputs_copied;
  };

  void work(size_t index, grp_session* s);
  void run(grp_session* s, const Batch& b, std::vector<std::vector<uint8_t>>& scratch,
           std::vector<CallTrace>* trace);
  double since_start() const;
  void write_trace() const;
  void formatter();
  void format(const Finished& f);
  void add_to_group(RowsGroup& g, const Finished& f);
  void open_group(RowsGroup& g, const Finished& f);
  void close_group(RowsGroup& g);
  void fail(const Request& r, const std::string& message);
  void stop_with(std::exception_ptr e);

  std::vector<SessionPtr> sessions_;
  const Signature& sig_;
  std::string file_;
  ResultWriter& writer_;
  BatchCounters& counters_;
  BatchQueue& queue_;
  bool rows_groups_;    // npy-rows files for many calls (RowsGroup)
  BufferPool buffers_;  // before finished_: its buffers return here
  BoundedQueue<Finished> finished_;
  std::vector<std::thread> workers_, formatters_;
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::atomic<bool> stopped_{false};  // by stop_with: the workers take no more calls
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::string trace_file_;                      // GRAPE_BATCH_TRACE; empty: no trace
  std::vector<std::vector<CallTrace>> traces_;  // one per worker
};

}  // namespace grape::cli
