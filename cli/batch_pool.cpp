#include "cli/batch_pool.h"

#include <chrono>

#include "cli/interrupt.h"

namespace grape::cli {

bool BatchQueue::push(Batch b) {
  if (interrupted()) return false;
  std::unique_lock<std::mutex> lock(mu_);
  // Wakes up now and then to notice Ctrl-C (the workers stop taking calls then).
  while (!not_full_.wait_for(lock, std::chrono::milliseconds(100),
                             [&] { return closed_ || q_.size() < capacity_; }))
    if (interrupted()) return false;
  if (closed_ || interrupted()) return false;
  q_.push_back(std::move(b));
  not_empty_.notify_one();
  return true;
}

std::optional<Batch> BatchQueue::pop() {
  std::unique_lock<std::mutex> lock(mu_);
  // Wakes up now and then to notice Ctrl-C: the signal handler cannot notify.
  while (!not_empty_.wait_for(lock, std::chrono::milliseconds(100), [&] { return closed_ || !q_.empty(); }))
    if (interrupted()) return std::nullopt;
  if (interrupted() || q_.empty()) return std::nullopt;
  Batch b = std::move(q_.front());
  q_.pop_front();
  not_full_.notify_one();
  return b;
}

void BatchQueue::close() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = true;
  not_empty_.notify_all();
  not_full_.notify_all();
}

WorkerPool::WorkerPool(std::vector<SessionPtr> sessions, const Signature& sig,
                       const std::string& requests_file, ResultWriter& writer, BatchCounters& counters,
                       BatchQueue& queue)
    : sessions_(std::move(sessions)),
      sig_(sig),
      file_(requests_file),
      writer_(writer),
      counters_(counters),
      queue_(queue) {
  for (auto& s : sessions_) threads_.emplace_back([this, raw = s.get()] { work(raw); });
}

WorkerPool::~WorkerPool() {
  queue_.close();
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

void WorkerPool::join() {
  for (auto& t : threads_)
    if (t.joinable()) t.join();
  if (error_) std::rethrow_exception(error_);
}

void WorkerPool::work(grp_session* s) {
  try {
    while (auto b = queue_.pop()) run(s, *b);
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(error_mu_);
      if (!error_) error_ = std::current_exception();
    }
    // The others stop too: a run that cannot write its results must not go on computing.
    queue_.close();
  }
}

void WorkerPool::fail(const Request& r, const std::string& message) {
  writer_.append(ResultWriter::error_line(r, file_ + ":" + std::to_string(r.line) + ": " + message));
  counters_.failed += 1;
  counters_.done += 1;
}

void WorkerPool::run(grp_session* s, const Batch& b) {
  auto t0 = std::chrono::steady_clock::now();
  size_t n_out = sig_.outputs.size();
  struct Out {
    grp_dtype dtype;
    const int64_t* shape;
    size_t rank;
    const void* data;
    size_t nbytes;
  };
  std::vector<Out> outs(n_out);
  try {
    // Every call starts from a fresh state, as `grape run` would: requests never see each other.
    if (sig_.stateful) check(grp_session_reset_state(s));
    std::vector<HostTensor> inputs = stack_inputs(b, sig_);
    for (size_t i = 0; i < inputs.size(); ++i)
      check(grp_session_set_input(s, sig_.inputs[i].name.c_str(), inputs[i].dtype, inputs[i].shape.data(),
                                  inputs[i].shape.size(), inputs[i].data(), inputs[i].nbytes()));
    check(grp_session_run(s));
    for (size_t i = 0; i < n_out; ++i) {
      Out& o = outs[i];
      check(grp_session_get_output(s, i, &o.dtype, &o.shape, &o.rank, &o.data, &o.nbytes));
      if (!sig_.batch_dim.empty() && (o.rank == 0 || o.shape[0] != b.rows))
        throw ApiError{GRP_ERR_INTERNAL, "output " + sig_.outputs[i].name + " does not have the " +
                                             std::to_string(b.rows) + " rows of the call"};
    }
  } catch (const ApiError& e) {
    if (b.requests.size() > 1) {
      for (const auto& r : b.requests) {
        Batch alone;
        alone.rows = r->rows;
        alone.requests.push_back(r);
        run(s, alone);
      }
      return;
    }
    fail(*b.requests[0], e.message);
    return;
  }
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  counters_.add_batch(ms, static_cast<size_t>(b.rows));
  std::string lines;
  size_t failed = 0;
  for (size_t k = 0; k < b.requests.size(); ++k) {
    const Request& r = *b.requests[k];
    std::vector<OutputSlice> slices;
    for (size_t i = 0; i < n_out; ++i) {
      const Out& o = outs[i];
      slices.push_back(
          slice_output(b, k, sig_, sig_.outputs[i].name, o.dtype, o.shape, o.rank, o.data, o.nbytes));
    }
    try {
      lines += writer_.ok_line(r, slices, b.requests.size(), ms);
    } catch (const ApiError& e) {
      lines += ResultWriter::error_line(r, file_ + ":" + std::to_string(r.line) + ": " + e.message);
      ++failed;
    }
  }
  writer_.append(lines);
  counters_.failed += failed;
  counters_.done += b.requests.size();
}

}  // namespace grape::cli
