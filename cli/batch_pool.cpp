#include "cli/batch_pool.h"

#include <chrono>

namespace grape::cli {

WorkerPool::WorkerPool(std::vector<SessionPtr> sessions, size_t formatters, const Signature& sig,
                       const std::string& requests_file, ResultWriter& writer, BatchCounters& counters,
                       BatchQueue& queue)
    : sessions_(std::move(sessions)),
      sig_(sig),
      file_(requests_file),
      writer_(writer),
      counters_(counters),
      queue_(queue),
      finished_(2 * std::max<size_t>(formatters, 1) + sessions_.size(), false) {
  for (auto& s : sessions_) workers_.emplace_back([this, raw = s.get()] { work(raw); });
  for (size_t i = 0; i < std::max<size_t>(formatters, 1); ++i)
    formatters_.emplace_back([this] {
      try {
        while (auto f = finished_.pop()) format(*f);
      } catch (...) {
        stop_with(std::current_exception());
      }
    });
}

WorkerPool::~WorkerPool() {
  queue_.close();
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  finished_.close();
  for (auto& t : formatters_)
    if (t.joinable()) t.join();
}

void WorkerPool::join() {
  for (auto& t : workers_)
    if (t.joinable()) t.join();
  // Every call that ran is formatted and written, Ctrl-C or not.
  finished_.close();
  for (auto& t : formatters_)
    if (t.joinable()) t.join();
  if (error_) std::rethrow_exception(error_);
}

void WorkerPool::stop_with(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = e;
  }
  // The others stop too: a run that cannot write its results must not go on computing.
  queue_.close();
  finished_.close();
}

void WorkerPool::work(grp_session* s) {
  try {
    while (auto b = queue_.pop()) run(s, *b);
  } catch (...) {
    stop_with(std::current_exception());
  }
}

void WorkerPool::fail(const Request& r, const std::string& message) {
  writer_.append(ResultWriter::error_line(r, file_ + ":" + std::to_string(r.line) + ": " + message));
  counters_.failed += 1;
  counters_.done += 1;
}

void WorkerPool::run(grp_session* s, const Batch& b) {
  auto t0 = std::chrono::steady_clock::now();
  Finished f;
  try {
    // Every call starts from a fresh state, as `grape run` would: requests never see each other.
    if (sig_.stateful) check(grp_session_reset_state(s));
    std::vector<HostTensor> inputs = stack_inputs(b, sig_);
    for (size_t i = 0; i < inputs.size(); ++i)
      check(grp_session_set_input(s, sig_.inputs[i].name.c_str(), inputs[i].dtype, inputs[i].shape.data(),
                                  inputs[i].shape.size(), inputs[i].data(), inputs[i].nbytes()));
    check(grp_session_run(s));
    for (size_t i = 0; i < sig_.outputs.size(); ++i) {
      grp_dtype dtype;
      const int64_t* shape;
      size_t rank, nbytes;
      const void* data;
      check(grp_session_get_output(s, i, &dtype, &shape, &rank, &data, &nbytes));
      if (!sig_.batch_dim.empty() && (rank == 0 || shape[0] != b.rows))
        throw ApiError{GRP_ERR_INTERNAL, "output " + sig_.outputs[i].name + " does not have the " +
                                             std::to_string(b.rows) + " rows of the call"};
      // The session's buffers are reused by its next call.
      const auto* bytes = static_cast<const uint8_t*>(data);
      f.outputs.push_back(HostTensor::owning(dtype, std::vector<int64_t>(shape, shape + rank),
                                             std::vector<uint8_t>(bytes, bytes + nbytes)));
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
  f.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  counters_.add_batch(f.ms, static_cast<size_t>(b.rows));
  f.batch = b;
  finished_.push(std::move(f));
}

void WorkerPool::format(const Finished& f) {
  const Batch& b = f.batch;
  std::string lines;
  size_t failed = 0;
  // npy-rows: each output of the call is one file, and every request names its rows of it.
  std::vector<std::string> call_files;
  std::string call_error;
  if (writer_.mode() == OutputsMode::NpyRows) {
    try {
      for (size_t i = 0; i < f.outputs.size(); ++i)
        call_files.push_back(writer_.write_call_output(b, sig_.outputs[i].name, f.outputs[i]));
    } catch (const ApiError& e) {
      call_error = e.message;
    }
  }
  int64_t row0 = 0;
  for (size_t k = 0; k < b.requests.size(); ++k) {
    const Request& r = *b.requests[k];
    std::vector<OutputSlice> slices;
    for (size_t i = 0; i < f.outputs.size(); ++i) {
      const HostTensor& o = f.outputs[i];
      slices.push_back(slice_output(b, k, row0, sig_, sig_.outputs[i].name, o));
    }
    bool rows = !sig_.batch_dim.empty();
    try {
      if (!call_error.empty()) throw ApiError{GRP_ERR_IO, call_error};
      lines += writer_.ok_line(r, slices, b.requests.size(), f.ms, call_files, rows ? row0 : -1);
    } catch (const ApiError& e) {
      lines += ResultWriter::error_line(r, file_ + ":" + std::to_string(r.line) + ": " + e.message);
      ++failed;
    }
    row0 += r.rows;
  }
  writer_.append(lines);
  counters_.failed += failed;
  counters_.done += b.requests.size();
}

}  // namespace grape::cli
