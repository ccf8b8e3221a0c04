// DIR/results.jsonl of `grape batch`: one line per request, appended as calls finish, fsynced in
// batches; large outputs as .npy files under DIR/outputs/ (each written atomically before the
// line that names it). On start it reads what an earlier run left, for --resume, dropping a
// truncated last line (a run killed in the middle of a write).
#pragma once
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "cli/batch_request.h"
#include "grape.h"

namespace grape::cli {

struct Batch;

// Auto: inline up to kInlineMaxElements, else a .npy per request and output. NpyRows: one .npy
// per call and output, each result naming its rows of it.
enum class OutputsMode { Auto, Inline, Npy, NpyRows };

// Outputs of at most this many elements are written inline in auto mode (docs/batch.md).
constexpr size_t kInlineMaxElements = 1024;

// One request's part of an output of a call: rows [r0, r0 + rows) when stacked, else all of it.
struct OutputSlice {
  std::string name;
  grp_dtype dtype;
  std::vector<int64_t> shape;
  const uint8_t* data;
  size_t nbytes;
};

// What an earlier run wrote: the requests it finished (ok or error), by id, and by line for
// requests it could not read an id from.
struct ResumeState {
  std::unordered_set<std::string> ids;
  std::unordered_set<size_t> lines_without_id;
  size_t ok = 0, failed = 0;
  bool dropped_partial_line = false;
};

class ResultWriter {
 public:
  // Creates DIR (and DIR/outputs when needed); with overwrite, removes results.jsonl and outputs/
  // first, else reads them into resume_state().
  ResultWriter(const std::string& dir, OutputsMode mode, bool overwrite);
  ~ResultWriter();
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  const ResumeState& resume_state() const { return resume_; }

  OutputsMode mode() const { return mode_; }
  const std::string& dir() const { return dir_; }

  // NpyRows: writes output `name` of a whole call, whose first request is `first`; returns its
  // path relative to DIR. Calls of the same requests get the same file (a rerun rewrites it with
  // the same values); others never do.
  std::string write_call_output(const Batch& call, const std::string& name, const HostTensor& value) const;
  // The path, relative to DIR, of output `name` of a call (write_call_output's file), with its
  // folder created.
  std::string call_file(const Batch& call, const std::string& name) const;

  // NpyRows, the lines of many requests at a time: ok_line's text for a request whose rows start at
  // row0 of every output file, appended to `out`. outputs[k] is rows_output() of output k.
  static std::string rows_output(const std::string& name, const std::string& file);
  static void append_rows_line(std::string& out, const Request& r, const std::vector<std::string>& outputs,
                               int64_t row0, size_t batch_requests, double batch_ms);

  // The result line of a request (with a newline). `ok_line` writes the .npy files it refers
  // to first (ApiError when one cannot be written). NpyRows: call_files[k] holds output k of the
  // call, and the request's rows start at row0 (-1: the whole file is the request's).
  std::string ok_line(const Request& r, const std::vector<OutputSlice>& outputs, size_t batch_requests,
                      double batch_ms, const std::vector<std::string>& call_files = {},
                      int64_t row0 = -1) const;
  static std::string error_line(const Request& r, const std::string& message);

  // Appends whole lines (one write) and fsyncs when the last fsync is over a second old.
  void append(const std::string& lines);
  // fsyncs what was appended.
  void sync();

 private:
  void read_existing();

  std::string dir_;
  std::string path_;
  OutputsMode mode_;
  int fd_ = -1;
  ResumeState resume_;
  std::mutex mu_;
  bool dirty_ = false;
  std::chrono::steady_clock::time_point last_sync_;
};

// FNV-1a (64-bit) of the id's bytes: the stable hash --shard I/N uses (shard = hash % N).
uint64_t fnv1a64(const std::string& s);

}  // namespace grape::cli
