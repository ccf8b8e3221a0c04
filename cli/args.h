// Command-line parsing for the grape CLI. Usage errors throw UsageError (exit status 2).
#pragma once
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace grape::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A value from the command line or a request, quoted for a message: 'value'. A value longer than
// 64 bytes shows its first 32 (cut on a UTF-8 boundary), "..." and its length, the rule the
// library's diagnostics follow (lang/diagnostics.h, quote_name), so that a 100k-character argument
// costs one line. head_of() is that cut alone, for other quoting styles.
std::string quoted(const std::string& value);
std::string head_of(const std::string& value);
constexpr size_t kMaxQuotedValue = 64;

struct Options {
  std::vector<std::string> files;
  std::string entry;
  std::map<std::string, int64_t> defines;
  std::vector<std::string> limits;  // --limit NAME=N, in the order given (the library checks NAME)
  std::string weights;
  bool random_weights = false;
  uint64_t seed = 0;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> .npy path
  std::string output_dir;
  std::string backend = "auto";
  bool backend_given = false;     // --backend on the command line (the fallback notice is printed then)
  std::string executor = "auto";  // CUDA: eager | graph | auto
  bool no_optimize = false;
  int warmup = 10;       // bench
  int iters = 100;       // bench
  bool json = false;     // bench
  bool profile = false;  // bench: per-kernel device times (CUDA eager executor)
  bool require_loop_bounds = false;
  int64_t max_loop_trips = 0;   // run, bench: the session's trip cap for loops without `max` (0: default)
  double timeout = 0;           // run, bench: seconds per run (0: none)
  std::string buckets;          // run, bench, batch: shape buckets, "S=pow2;T=16,64" (--buckets, repeatable)
  int64_t graph_memory_mb = 0;  // run, bench, batch: graph memory budget in MiB (0: the library's default)
  std::string shapes;           // bench: NAME=LO:HI[:STEP], one call per value of the dim
  std::string arch = "sm_80,sm_90";  // compile: comma-separated NVRTC targets
  std::string rows;                  // compile: row counts whose row-count variants the bundle holds
  std::string bundle;                // compile: the kernel bundle to write; run, bench, batch: the one to use
  // batch (docs/batch.md)
  std::string requests;                      // request file, "-" for standard input
  int64_t max_batch = 32;                    // most rows in one call
  std::string devices;                       // "all" or comma-separated ordinals; empty: device 0
  int threads = 0;                           // sessions per device (0: auto)
  int64_t shard_index = 0, shard_count = 1;  // --shard I/N
  bool overwrite = false;                    // start over instead of resuming
  bool batch_warmup = true;                  // one call per session before the requests (--no-warmup)
  std::string outputs = "auto";              // auto | inline | npy
  bool quiet = false;
  bool help = false;
};

// Parses the arguments after the command name. `allowed` lists the flags the command accepts.
Options parse_options(const std::vector<std::string>& args, const std::vector<std::string>& allowed);

}  // namespace grape::cli
