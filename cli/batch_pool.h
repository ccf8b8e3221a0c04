// The workers of `grape batch`: one thread per session (sessions on every --devices device, and
// --threads of them per device), all taking calls from one shared queue. A call that fails is
// retried one request at a time, so that one bad request cannot fail its neighbours.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "cli/api.h"
#include "cli/batch_progress.h"
#include "cli/batch_results.h"
#include "cli/batch_stack.h"

namespace grape::cli {

// A bounded queue: the reader blocks when the workers are behind, so requests are read only a
// little ahead of the calls.
class BatchQueue {
 public:
  explicit BatchQueue(size_t capacity) : capacity_(capacity) {}
  // False when the queue was closed (the batch is dropped).
  bool push(Batch b);
  // Nothing when the queue is closed and empty, or after Ctrl-C.
  std::optional<Batch> pop();
  void close();

 private:
  size_t capacity_;
  std::deque<Batch> q_;
  bool closed_ = false;
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
};

class WorkerPool {
 public:
  WorkerPool(std::vector<SessionPtr> sessions, const Signature& sig, const std::string& requests_file,
             ResultWriter& writer, BatchCounters& counters, BatchQueue& queue);
  ~WorkerPool();
  // Waits for the workers; rethrows the first error that stopped one (an unwritable result).
  void join();
  size_t size() const { return sessions_.size(); }

 private:
  void work(grp_session* s);
  void run(grp_session* s, const Batch& b);
  void fail(const Request& r, const std::string& message);

  std::vector<SessionPtr> sessions_;
  const Signature& sig_;
  std::string file_;
  ResultWriter& writer_;
  BatchCounters& counters_;
  BatchQueue& queue_;
  std::vector<std::thread> threads_;
  std::mutex error_mu_;
  std::exception_ptr error_;
};

}  // namespace grape::cli
