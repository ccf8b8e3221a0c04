#include "cli/batch_pool.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace grape::cli {

namespace {

// A group of npy-rows calls is written out when it holds this much, or when its first call is
// this old: the results of a run that stops at once (kill -9, a crash) lose at most this much
// time more than the second between fsyncs of results.jsonl.
constexpr uint64_t kGroupBytes = 64ull << 20;
constexpr auto kGroupAge = std::chrono::milliseconds(500);

}  // namespace

std::shared_ptr<const uint8_t> BufferPool::copy(const void* data, size_t n) {
  std::unique_ptr<std::vector<uint8_t>> buf;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      buf = std::move(free_.back());
      free_.pop_back();
    }
  }
  if (!buf) buf = std::make_unique<std::vector<uint8_t>>();
  // Grown, never shrunk: no zeroing once the buffers have the size of a call's output.
  if (buf->size() < n) buf->resize(n);
  if (n) std::memcpy(buf->data(), data, n);
  std::vector<uint8_t>* raw = buf.release();
  return std::shared_ptr<const uint8_t>(raw->data(), [this, raw](const uint8_t*) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.emplace_back(raw);
  });
}

WorkerPool::WorkerPool(std::vector<SessionPtr> sessions, size_t formatters, const Signature& sig,
                       const std::string& requests_file, ResultWriter& writer, BatchCounters& counters,
                       BatchQueue& queue)
    : sessions_(std::move(sessions)),
      sig_(sig),
      file_(requests_file),
      writer_(writer),
      counters_(counters),
      queue_(queue),
      rows_groups_(writer.mode() == OutputsMode::NpyRows && !sig.batch_dim.empty()),
      finished_(2 * std::max<size_t>(formatters, 1) + sessions_.size(), false) {
  if (const char* f = std::getenv("GRAPE_BATCH_TRACE")) trace_file_ = f;
  traces_.resize(sessions_.size());
  for (size_t i = 0; i < sessions_.size(); ++i)
    workers_.emplace_back([this, i, raw = sessions_[i].get()] { work(i, raw); });
  for (size_t i = 0; i < std::max<size_t>(formatters, 1); ++i)
    formatters_.emplace_back([this] { formatter(); });
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
  if (!trace_file_.empty()) write_trace();
  if (error_) std::rethrow_exception(error_);
}

double WorkerPool::since_start() const {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start_).count();
}

void WorkerPool::write_trace() const {
  std::ofstream out(trace_file_);
  out << "session,rows,taken_ms,inputs_set_ms,ran_ms,outputs_copied_ms\n";
  for (size_t i = 0; i < traces_.size(); ++i)
    for (const CallTrace& c : traces_[i])
      out << i << ',' << c.rows << ',' << c.taken << ',' << c.inputs_set << ',' << c.ran << ','
          << c.outputs_copied << '\n';
  if (!out) std::cerr << "grape batch: warning: cannot write GRAPE_BATCH_TRACE file " << trace_file_ << "\n";
}

void WorkerPool::stop_with(std::exception_ptr e) {
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) error_ = e;
  }
  stopped_.store(true);
  // The others stop too: a run that cannot write its results must not go on computing.
  queue_.close();
  finished_.close();
}

void WorkerPool::work(size_t index, grp_session* s) {
  try {
    std::vector<std::vector<uint8_t>> scratch;  // stacked inputs, reused from call to call
    std::vector<CallTrace>* trace = trace_file_.empty() ? nullptr : &traces_[index];
    while (!stopped_.load())
      if (auto b = queue_.pop())
        run(s, *b, scratch, trace);
      else
        break;
  } catch (const MappedFileChanged& e) {
    // The calls that finished before are written; this one and those not run yet get no result
    // line, so that the next run, once the file is whole again, runs them.
    stop_with(std::make_exception_ptr(ApiError{
        GRP_ERR_IO, "grape batch: error: " + e.message +
                        "\ngrape batch: stopped (the results written so far stand): restore the file and run "
                        "the same command again to resume"}));
  } catch (...) {
    stop_with(std::current_exception());
  }
}

void WorkerPool::fail(const Request& r, const std::string& message) {
  writer_.append(ResultWriter::error_line(r, file_ + ":" + std::to_string(r.line) + ": " + message));
  counters_.failed += 1;
  counters_.done += 1;
}

void WorkerPool::run(grp_session* s, const Batch& b, std::vector<std::vector<uint8_t>>& scratch,
                     std::vector<CallTrace>* trace) {
  auto t0 = std::chrono::steady_clock::now();
  CallTrace times{static_cast<size_t>(b.rows), trace ? since_start() : 0, 0, 0, 0};
  Finished f;
  try {
    // Every call starts from a fresh state, as `grape run` would: requests never see each other.
    if (sig_.stateful) check(grp_session_reset_state(s));
    std::vector<HostTensor> inputs = stack_inputs(b, sig_, scratch);
    for (size_t i = 0; i < inputs.size(); ++i)
      check(grp_session_set_input(s, sig_.inputs[i].name.c_str(), inputs[i].dtype, inputs[i].shape.data(),
                                  inputs[i].shape.size(), inputs[i].data(), inputs[i].nbytes()));
    // The inputs are read (set_input copies them): rows of a mapped file that shrank meanwhile
    // may be zeros, and such a call must not run (MappedFileChanged stops the run).
    check_mapped_inputs(b);
    if (trace) times.inputs_set = since_start();
    check(grp_session_run(s));
    if (trace) times.ran = since_start();
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
      f.outputs.push_back(
          HostTensor{dtype, std::vector<int64_t>(shape, shape + rank), buffers_.copy(data, nbytes), nbytes});
    }
  } catch (const ApiError& e) {
    if (b.requests.size() > 1) {
      for (const auto& r : b.requests) {
        Batch alone;
        alone.rows = r->rows;
        alone.requests.push_back(r);
        run(s, alone, scratch, trace);
      }
      return;
    }
    fail(*b.requests[0], e.message);
    return;
  }
  if (trace) {
    times.outputs_copied = since_start();
    trace->push_back(times);
  }
  f.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  counters_.add_batch(f.ms, static_cast<size_t>(b.rows));
  f.batch = b;
  finished_.push(std::move(f));
}

void WorkerPool::formatter() {
  try {
    RowsGroup group;
    for (;;) {
      bool timed_out = false;
      auto deadline =
          group.files.empty() ? std::chrono::steady_clock::time_point::max() : group.opened + kGroupAge;
      std::optional<Finished> f = finished_.pop_until(deadline, timed_out);
      if (!f && !timed_out) break;
      if (!f || !rows_groups_) {
        if (f) format(*f);
        if (timed_out) close_group(group);
        continue;
      }
      add_to_group(group, *f);
      if (group.bytes() >= kGroupBytes || std::chrono::steady_clock::now() - group.opened >= kGroupAge)
        close_group(group);
    }
    close_group(group);
  } catch (...) {
    stop_with(std::current_exception());
  }
}

uint64_t WorkerPool::RowsGroup::bytes() const {
  uint64_t n = 0;
  for (const auto& file : files) n += file->bytes();
  return n;
}

void WorkerPool::open_group(RowsGroup& g, const Finished& f) {
  // Named as the file of its first call alone would be: unique, since a call's requests are in
  // no other call of this run, nor of a run that resumes it.
  g.opened = std::chrono::steady_clock::now();
  for (size_t i = 0; i < f.outputs.size(); ++i) {
    const HostTensor& o = f.outputs[i];
    std::string rel = writer_.call_file(f.batch, sig_.outputs[i].name);
    g.files.push_back(
        std::make_unique<NpyRowsFile>((std::filesystem::path(writer_.dir()) / rel).string(), o.dtype,
                                      std::vector<int64_t>(o.shape.begin() + 1, o.shape.end())));
    g.outputs.push_back(ResultWriter::rows_output(sig_.outputs[i].name, rel));
  }
}

void WorkerPool::add_to_group(RowsGroup& g, const Finished& f) {
  // A call whose outputs differ in dtype or in the dims after the rows starts a new group.
  for (size_t i = 0; i < g.files.size() && i < f.outputs.size(); ++i)
    if (!g.files[i]->fits(f.outputs[i].dtype, f.outputs[i].shape.data() + 1, f.outputs[i].shape.size() - 1)) {
      close_group(g);
      break;
    }
  try {
    if (g.files.empty()) open_group(g, f);
    int64_t row0 = g.files[0]->rows();
    for (size_t i = 0; i < f.outputs.size(); ++i)
      g.files[i]->append(f.outputs[i].data(), f.batch.rows, f.outputs[i].nbytes());
    g.calls.push_back({f.batch, f.ms, row0});
  } catch (const ApiError& e) {
    // The group's files are not whole: its calls and this one fail with the reason.
    std::vector<RowsGroup::Call> calls = std::move(g.calls);
    g = RowsGroup{};
    calls.push_back({f.batch, f.ms, 0});
    std::string lines;
    size_t n = 0;
    for (const auto& c : calls)
      for (const auto& r : c.batch.requests) {
        lines += ResultWriter::error_line(*r, file_ + ":" + std::to_string(r->line) + ": " + e.message);
        ++n;
      }
    writer_.append(lines);
    counters_.failed += n;
    counters_.done += n;
  }
}

void WorkerPool::close_group(RowsGroup& g) {
  if (g.files.empty()) return;
  RowsGroup done = std::move(g);
  g = RowsGroup{};
  std::string error;
  try {
    for (auto& file : done.files) file->finish();
  } catch (const ApiError& e) {
    error = e.message;
  }
  std::string lines;
  size_t n = 0;
  for (const auto& c : done.calls) {
    int64_t row = c.row0;
    for (const auto& r : c.batch.requests) {
      if (error.empty())
        ResultWriter::append_rows_line(lines, *r, done.outputs, row, c.batch.requests.size(), c.ms);
      else
        lines += ResultWriter::error_line(*r, file_ + ":" + std::to_string(r->line) + ": " + error);
      row += r->rows;
      ++n;
    }
  }
  writer_.append(lines);
  if (!error.empty()) counters_.failed += n;
  counters_.done += n;
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
