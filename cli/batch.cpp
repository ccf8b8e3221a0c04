#include "cli/batch.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <thread>

#include "cli/api.h"
#include "cli/batch_pool.h"
#include "cli/batch_progress.h"
#include "cli/batch_request.h"
#include "cli/batch_results.h"
#include "cli/batch_seen_ids.h"
#include "cli/batch_signature.h"
#include "cli/batch_stack.h"
#include "cli/batch_warmup.h"
#include "cli/interrupt.h"

namespace grape::cli {

const char* kBatchUsage =
    "usage: grape batch FILE --entry NAME --requests R.jsonl|- --output DIR [-D NAME=VALUE]...\n"
    "                   [--weights F.safetensors | --random-weights SEED] [--input NAME=F.npy]...\n"
    "                   [--backend cpu|cuda|auto] [--executor eager|graph|mono|auto] [--max-batch N]\n"
    "                   [--devices all|0,1,...] [--threads N|auto] [--shard I/N] [--resume | --overwrite]\n"
    "                   [--outputs auto|inline|npy|npy-rows] [--quiet] [--json] [--max-loop-trips N] "
    "[--timeout S]\n"
    "                   [--limit NAME=N]... [--bundle F] [--buckets SPEC]... [--graph-memory MB] "
    "[--no-warmup]\n"
    "Runs the entry once for every line of the request file (JSONL: {\"id\": ..., \"inputs\": {NAME: nested\n"
    "array | scalar | {\"npy\": PATH}}}) and appends one result line per request to DIR/results.jsonl\n"
    "(id, line, status ok with its outputs or error with the reason, the call's size and time).\n"
    "Requests that differ only in the batch dim are stacked into calls of at most --max-batch rows\n"
    "(default 32). --devices runs a session on each listed GPU (default: device 0); --threads N\n"
    "sessions per device (auto: 1 per GPU; on the CPU backend half the cores, at most 8).\n"
    "--shard I/N takes the requests whose id hashes (FNV-1a) to I. Re-running skips the ids\n"
    "already in results.jsonl (--overwrite starts over). Outputs of at most 1024 elements are\n"
    "written inline, larger ones as DIR/outputs/*.npy (--outputs). Ctrl-C stops after the calls in\n"
    "flight. Exit status 1 if any request failed. --limit NAME=N as for `grape check`; --bundle F\n"
    "as for `grape run`. Before reading requests, every session runs one call of --max-batch rows of\n"
    "zeros (where the entry's other dims are known), so that first-call costs are paid at start-up\n"
    "(--no-warmup: not).\n"
    "See docs/batch.md.\n";

const std::vector<std::string> kBatchFlags = {
    "-D",         "--entry",   "--weights",  "--random-weights", "--input",
    "--output",   "--backend", "--executor", "--requests",       "--max-batch",
    "--devices",  "--threads", "--shard",    "--resume",         "--overwrite",
    "--outputs",  "--quiet",   "-q",         "--json",           "--max-loop-trips",
    "--timeout",  "--limit",   "--bundle",   "--buckets",        "--graph-memory",
    "--no-warmup"};

namespace {

// The sessions the workers use: --threads of them on every --devices device.
std::vector<SessionPtr> open_sessions(grp_model* model, const Options& o, std::string& backend) {
  std::vector<int> devices;
  bool all = o.devices == "all";
  if (o.devices.empty() || all) {
    devices.push_back(0);
  } else {
    size_t pos = 0;
    while (pos <= o.devices.size()) {
      size_t comma = o.devices.find(',', pos);
      std::string part = o.devices.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      char* end = nullptr;
      long d = std::strtol(part.c_str(), &end, 10);
      if (part.empty() || *end != '\0' || d < 0 || d > 1023)
        throw UsageError("--devices expects all or a list of device numbers like 0,1, got " +
                         quoted(o.devices));
      if (std::find(devices.begin(), devices.end(), static_cast<int>(d)) != devices.end())
        throw UsageError("--devices lists device " + part + " twice");
      devices.push_back(static_cast<int>(d));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  std::vector<SessionPtr> sessions;
  sessions.push_back(open_session(model, o, devices[0], true));
  backend = grp_session_backend(sessions[0].get());
  if (backend == "cpu") {
    if (devices.size() > 1 || devices[0] != 0)
      throw UsageError(
          "--devices: the CPU backend has one device, 0 (use --threads N for parallel sessions)");
  } else if (all) {
    // The C API has no device count: open sessions on 1, 2, ... until one does not exist.
    for (int d = 1;; ++d) {
      try {
        sessions.push_back(open_session(model, o, d, false));
        devices.push_back(d);
      } catch (const ApiError& e) {
        if (e.code != GRP_ERR_NO_DEVICE) throw;
        break;
      }
    }
  } else {
    for (size_t k = 1; k < devices.size(); ++k) sessions.push_back(open_session(model, o, devices[k], false));
  }
  // The extra sessions per device, device by device. auto: one per GPU (a session keeps its GPU
  // busy); on the CPU, half the cores up to 8, since one call of a small batch runs on one core
  // and the other half reads the requests.
  int threads = o.threads;
  if (threads == 0)
    threads =
        backend == "cpu" ? static_cast<int>(std::clamp(std::thread::hardware_concurrency() / 2, 1u, 8u)) : 1;
  std::vector<SessionPtr> out;
  for (size_t k = 0; k < sessions.size(); ++k) {
    out.push_back(std::move(sessions[k]));
    for (int t = 1; t < threads; ++t) out.push_back(open_session(model, o, devices[k], false));
  }
  return out;
}

// Lines of a regular file (for the progress display's total); 0 when unknown.
size_t count_lines(const std::string& path) {
  std::error_code ec;
  if (path == "-" || !std::filesystem::is_regular_file(path, ec)) return 0;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  size_t n = 0;
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    n += static_cast<size_t>(std::count(buf.data(), buf.data() + in.gcount(), '\n'));
  return n;
}

// The request file is read this much at a time (whole lines): one window, parsed on several
// threads while the requests of the window before are handed to the batcher.
constexpr size_t kWindowBytes = 1 << 20;
// Rows of requests queued in calls ahead of the sessions (cmd_batch sizes the queue), besides a
// few calls per session: enough that a session finds its next call ready while a window is read.
constexpr int64_t kQueuedRows = 2048;

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

// A window of the request file: its whole lines, and what the parsing threads made of them.
struct Window {
  std::string text;
  std::vector<std::string_view> lines;  // the non-blank lines to read, in text
  std::vector<size_t> numbers;          // their line numbers
  std::vector<std::shared_ptr<Request>> parsed;
};

// Reads the request file in large blocks (a line at a time through an istream cost as much as
// the rest of the reading).
class LineReader {
 public:
  // `stop`: whether to read no more (Ctrl-C, or the workers stopped), asked while waiting for
  // input, so that a pipe that stays open does not hold up the end of the run.
  LineReader(int fd, std::string file, std::function<bool()> stop)
      : fd_(fd), file_(std::move(file)), stop_(std::move(stop)) {}

  // The next window's lines, skipping blank ones and those resume knows by line number; false
  // at the end of the file, or when `stop` ended the wait for input.
  bool next(Window& w, const ResumeState& resume) {
    w.text.swap(carry_);
    carry_.clear();
    w.lines.clear();
    w.numbers.clear();
    if ((w.text.empty() && eof_) || stopped_) return false;
    size_t last_nl;
    while ((last_nl = w.text.rfind('\n')) == std::string::npos || w.text.size() < kWindowBytes) {
      if (eof_ || !fill(w.text)) break;
    }
    // Not a window, whose last line might be cut short and so read as a bad request.
    if (stopped_) return false;
    // Whole lines only: the rest starts the next window (at the end, the last line needs no '\n').
    last_nl = w.text.rfind('\n');
    if (!eof_ && last_nl != std::string::npos) {
      carry_.assign(w.text, last_nl + 1);
      w.text.resize(last_nl + 1);
    }
    std::string_view all(w.text);
    for (size_t pos = 0; pos < all.size();) {
      size_t nl = all.find('\n', pos);
      size_t stop = nl == std::string_view::npos ? all.size() : nl;
      std::string_view line = all.substr(pos, stop - pos);
      pos = stop + 1;
      ++line_no_;
      if (blank(line)) continue;
      // Requests without an id go to a shard by their line number; resume knows them by it too.
      if (!resume.lines_without_id.empty() && resume.lines_without_id.count(line_no_)) continue;
      w.lines.push_back(line);
      w.numbers.push_back(line_no_);
    }
    return true;
  }

 private:
  // Appends one block; false at the end of the file or when stopped.
  bool fill(std::string& text) {
    // A regular file is readable at once; a pipe or terminal is waited for 100 ms at a time.
    for (;;) {
      pollfd p{fd_, POLLIN, 0};
      int ready = ::poll(&p, 1, 100);
      if (ready > 0 || (ready < 0 && errno != EINTR)) break;  // a poll error: read() reports it
      if (stop_()) {
        stopped_ = true;
        return false;
      }
    }
    size_t at = text.size();
    text.resize(at + kWindowBytes);
    for (;;) {
      ssize_t n = ::read(fd_, text.data() + at, kWindowBytes);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw ApiError{GRP_ERR_IO, "--requests " + file_ + ": read error"};
      text.resize(at + static_cast<size_t>(n));
      if (n == 0) eof_ = true;
      return n > 0;
    }
  }

  int fd_;
  std::string file_;
  std::function<bool()> stop_;
  std::string carry_;
  bool eof_ = false;
  bool stopped_ = false;
  size_t line_no_ = 0;
};

// Parses a window's lines on a few threads, which the caller joins with finish().
class WindowParser {
 public:
  WindowParser(Window& w, const RequestContext& ctx) {
    w.parsed.assign(w.lines.size(), nullptr);
    size_t threads = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
    threads = std::min(threads, std::max<size_t>(1, w.lines.size() / 64));
    // Interleaved slices of 256 lines: threads that start late still find work near the front.
    for (size_t t = 0; t < threads; ++t)
      pool_.emplace_back([&w, &ctx, t, threads] {
        NpyMemo memo;
        for (size_t b = t * 256; b < w.lines.size(); b += threads * 256)
          for (size_t i = b; i < std::min(b + 256, w.lines.size()); ++i) {
            auto r = std::make_shared<Request>(parse_request(w.lines[i], w.numbers[i], ctx, &memo));
            // Here, on many threads, not on the one that dispatches the requests in order.
            if (r->has_id) r->id_hash = fnv1a64(r->id);
            w.parsed[i] = std::move(r);
          }
      });
  }
  ~WindowParser() { finish(); }
  void finish() {
    for (auto& th : pool_)
      if (th.joinable()) th.join();
  }

 private:
  std::vector<std::thread> pool_;
};

struct ReadCounts {
  size_t requests = 0;  // in this run: of this shard, not done before
  size_t resumed = 0;   // of this shard, skipped as already in results.jsonl
};

// What the reader does with each parsed request, in file order: shard, resume and duplicate
// checks, then the batcher, whose full calls go to the queue; requests that cannot run get
// their error line at once.
class Dispatcher {
 public:
  Dispatcher(const RequestContext& ctx, const Options& o, const ResumeState& resume, Batcher& batcher,
             BatchQueue& queue, ResultWriter& writer, BatchCounters& counters)
      : ctx_(ctx),
        resume_(resume),
        batcher_(batcher),
        queue_(queue),
        writer_(writer),
        counters_(counters),
        shard_(static_cast<uint64_t>(o.shard_index)),
        shards_(static_cast<uint64_t>(o.shard_count)) {}

  void dispatch(Window& w) {
    std::string error_lines;
    size_t errors = 0;
    for (auto& r : w.parsed) {
      if (interrupted()) break;
      if (shards_ > 1) {
        uint64_t h = r->has_id ? r->id_hash : static_cast<uint64_t>(r->line - 1);
        if (h % shards_ != shard_) continue;
      }
      if (r->has_id && !resume_.ids.empty() && resume_.ids.count(r->id)) {
        ++counts.resumed;
        continue;
      }
      ++counts.requests;
      if (r->has_id && r->error.empty()) {
        if (std::optional<size_t> first = seen_.insert(r->id_hash, r->id, r->line))
          r->error = ctx_.file + ":" + std::to_string(r->line) + ": duplicate id " + r->id_json +
                     " (first at line " + std::to_string(*first) + ")";
      }
      if (!r->error.empty()) {
        error_lines += ResultWriter::error_line(*r, r->error);
        ++errors;
        continue;
      }
      for (Batch& b : batcher_.add(std::move(r)))
        if (!queue_.push(std::move(b))) stopped = true;
      // Closed by the workers, which stopped (a result that cannot be written, a mapped input
      // that changed): the requests left would not run.
      if (stopped) break;
    }
    if (!error_lines.empty()) {
      writer_.append(error_lines);
      counters_.failed += errors;
      counters_.done += errors;
    }
  }

  ReadCounts counts;
  bool stopped = false;  // the queue took no more calls

 private:
  const RequestContext& ctx_;
  const ResumeState& resume_;
  Batcher& batcher_;
  BatchQueue& queue_;
  ResultWriter& writer_;
  BatchCounters& counters_;
  uint64_t shard_, shards_;
  // Ids seen in this run, with their line: a second request with the same id is an error.
  SeenIds seen_;
};

// Reads the request file a window at a time and dispatches every request of this shard that is
// not done yet: window k+1 is parsed while window k is dispatched. Stops at the end of the file
// or at Ctrl-C.
ReadCounts read_requests(int fd, const RequestContext& ctx, const ResumeState& resume, Dispatcher& d,
                         BatchQueue& queue) {
  LineReader reader(fd, ctx.file, [&] { return interrupted() || queue.closed(); });
  Window windows[2];
  int cur = 0;
  bool more = reader.next(windows[cur], resume);
  std::unique_ptr<WindowParser> parsing;
  if (more) parsing = std::make_unique<WindowParser>(windows[cur], ctx);
  while (more && !interrupted() && !d.stopped) {
    parsing->finish();
    int nxt = 1 - cur;
    more = reader.next(windows[nxt], resume);
    std::unique_ptr<WindowParser> next_parsing;
    if (more) next_parsing = std::make_unique<WindowParser>(windows[nxt], ctx);
    d.dispatch(windows[cur]);
    parsing = std::move(next_parsing);
    cur = nxt;
  }
  return d.counts;
}

}  // namespace

int cmd_batch(const Options& o) {
  if (o.requests.empty()) throw UsageError("batch needs --requests R.jsonl (or - for standard input)");
  if (o.output_dir.empty()) throw UsageError("batch needs --output DIR");
  auto t0 = std::chrono::steady_clock::now();
  ModelPtr model = load_with_weights(o, "batch");

  std::string backend;
  std::vector<SessionPtr> sessions = open_sessions(model.get(), o, backend);
  Signature sig = read_signature(sessions[0].get());

  // --input values are shared by every request that does not give the parameter itself.
  std::vector<HostTensor> shared_values;
  std::vector<int> shared_index(sig.inputs.size(), -1);
  for (auto& [index, t] : read_named_inputs(sessions[0].get(), o)) {
    shared_values.push_back(HostTensor::of(t.release()));
    shared_index[index] = static_cast<int>(shared_values.size() - 1);
    // Checked once here, not in every request that uses it.
    std::string why = mismatch(shared_values.back(), sig.inputs[index], "");
    if (!why.empty()) throw ApiError{GRP_ERR_TYPE, "--input " + sig.inputs[index].name + ": " + why};
  }
  RequestContext ctx;
  ctx.sig = &sig;
  ctx.file = o.requests == "-" ? "<stdin>" : o.requests;
  ctx.base_dir = o.requests == "-" ? "" : std::filesystem::path(o.requests).parent_path().string();
  for (int k : shared_index) ctx.shared.push_back(k < 0 ? nullptr : &shared_values[static_cast<size_t>(k)]);
  NpyCache npy_rows;
  ctx.npy_rows = &npy_rows;

  int fd = 0;  // standard input for -
  if (o.requests != "-") {
    fd = ::open(o.requests.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ApiError{GRP_ERR_IO, "--requests " + o.requests + ": cannot open the file"};
  }
  struct CloseFd {
    int fd;
    ~CloseFd() {
      if (fd > 0) ::close(fd);
    }
  } close_fd{fd};

  OutputsMode mode = o.outputs == "inline"     ? OutputsMode::Inline
                     : o.outputs == "npy"      ? OutputsMode::Npy
                     : o.outputs == "npy-rows" ? OutputsMode::NpyRows
                                               : OutputsMode::Auto;
  ResultWriter writer(o.output_dir, mode, o.overwrite);
  const ResumeState& resume = writer.resume_state();
  if (resume.dropped_partial_line && !o.quiet)
    std::cerr << "grape batch: dropped the truncated last line of " << o.output_dir
              << "/results.jsonl (an interrupted run); that request runs again\n";
  if (!o.quiet && sig.batch_dim.empty() && o.max_batch > 1)
    std::cerr << "grape batch: one call per request: " << sig.why_not
              << " (docs/batch.md, dynamic batching)\n";

  // Where the shapes are not known before the requests (warmup_blocker), there is none.
  double warmup_seconds = -1;
  if (o.batch_warmup && warmup_blocker(sig, ctx.shared, o.max_batch).empty()) {
    auto t_warm = std::chrono::steady_clock::now();
    size_t failed = warm_up(sessions, sig, ctx.shared, o.max_batch);
    warmup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_warm).count();
    if (failed && !o.quiet)
      std::cerr << "grape batch: the warm-up call failed on " << failed << " session"
                << (failed == 1 ? "" : "s") << " (zeros as inputs; the requests' calls run as usual)\n";
  }

  BatchCounters counters;
  auto t_ready = std::chrono::steady_clock::now();
  ProgressLine progress(counters, !o.quiet);
  // Counting the lines reads the whole file once more: only for the display.
  if (size_t lines = progress.enabled() ? count_lines(o.requests) : 0) {
    size_t mine = o.shard_count > 1 ? lines / static_cast<size_t>(o.shard_count) : lines;
    size_t done_before = resume.ok + resume.failed;
    progress.set_total(mine > done_before ? mine - done_before : 0, o.shard_count > 1);
  }

  // Room for a window's worth of calls: the next window is read while these run.
  BatchQueue queue(
      static_cast<size_t>(std::max<int64_t>(8, 2 * kQueuedRows / o.max_batch)) + 4 * sessions.size(), true);
  size_t n_sessions = sessions.size();
  // Formatting threads: half the cores the sessions leave, 1 to 8 (a GPU session leaves nearly all).
  size_t cores = std::max(1u, std::thread::hardware_concurrency());
  size_t formatters = std::clamp<size_t>(cores > n_sessions ? (cores - n_sessions) / 2 : 1, 1, 8);
  WorkerPool pool(std::move(sessions), formatters, sig, ctx.file, writer, counters, queue);
  Batcher batcher(sig, o.max_batch);

  Dispatcher dispatcher(ctx, o, resume, batcher, queue, writer, counters);
  ReadCounts counts = read_requests(fd, ctx, resume, dispatcher, queue);
  if (!interrupted())
    for (Batch& b : batcher.drain()) queue.push(std::move(b));
  queue.close();
  pool.join();
  writer.sync();
  progress.stop();

  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_ready).count();
  BatchSummary s = summarize(counters, secs);
  s.startup_seconds = std::chrono::duration<double>(t_ready - t0).count();
  s.warmup_seconds = warmup_seconds;
  s.requests = counts.requests;
  s.resumed = counts.resumed;
  s.sessions = n_sessions;
  s.backend = backend;
  s.interrupted = interrupted();
  s.results = (std::filesystem::path(o.output_dir) / "results.jsonl").string();
  if (o.json)
    std::cout << summary_json(s) << std::flush;
  else if (!o.quiet)
    std::cerr << summary_text(s);
  if (s.interrupted) {
    std::cerr << "grape batch: interrupted (Ctrl-C) after " << s.ok + s.failed << " of " << counts.requests
              << " requests; run the same command again to resume\n";
    return 1;
  }
  // Failures of an earlier run count too: results.jsonl holds them, and resuming does not retry them.
  size_t failed = s.failed + resume.failed;
  if (failed && !o.quiet)
    std::cerr << "grape batch: " << failed << " request" << (failed == 1 ? "" : "s")
              << " failed (status \"error\" in " << s.results << ")\n";
  return failed ? 1 : 0;
}

}  // namespace grape::cli
