// The grape command: check, ir, run, bench, compile, cache. It is a client of the C API (grape.h) and nothing
// else: all program logic lives in the library; this file only parses arguments, moves files and prints.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/args.h"
#include "cli/auto_report.h"
#include "cli/batch.h"
#include "cli/bench_shapes.h"
#include "cli/build_progress.h"
#include "cli/interrupt.h"
#include "cli/values.h"
#include "grape.h"

namespace grape::cli {
namespace {

const char* kUsage =
    "usage: grape <command> [options]\n"
    "\n"
    "commands:\n"
    "  check FILE...            parse and check .grp programs\n"
    "  ir FILE                  print the predicated IR\n"
    "  bench FILE               time an entry point (latency percentiles, kernels, syncs)\n"
    "  run FILE                 run an entry point (on a CUDA GPU if there is one, else the CPU)\n"
    "  batch FILE               run an entry point on every request of a JSONL file (docs/batch.md)\n"
    "  compile FILE             compile every generated CUDA kernel with NVRTC (--arch sm_80,sm_90)\n"
    "  cache info|clear         show or empty the on-disk kernel cache\n"
    "\n"
    "  grape --version          print the version\n"
    "  grape CMD --help         help for one command\n"
    "\n"
    "exit status: 0 success, 1 an error in the program or the data, 2 a usage error\n";

const char* kCheckUsage =
    "usage: grape check FILE... [-D NAME=VALUE]... [--require-loop-bounds] [--limit NAME=N]...\n"
    "Parses and type-checks each file and lowers every entry point; prints all errors found.\n"
    "--require-loop-bounds rejects loops without a compile-time trip bound (`while ... max N`).\n"
    "--limit NAME=N sets one of the compiler's resource limits (max_ops, max_program_elements, ...;\n"
    "docs/language.md, \"Limits\"); it may be repeated and wins over $GRAPE_LIMITS.\n";

const char* kIrUsage =
    "usage: grape ir FILE [--entry NAME] [-D NAME=VALUE]... [--no-optimize] [--limit NAME=N]...\n"
    "Prints the predicated IR of every entry point (or only NAME). --no-optimize shows it as\n"
    "lowered, before constant folding, CSE and dead-code elimination.\n"
    "--limit NAME=N sets one of the compiler's resource limits (max_ops, max_program_elements, ...;\n"
    "docs/language.md, \"Limits\"); it may be repeated and wins over $GRAPE_LIMITS.\n";

const char* kBenchUsage =
    "usage: grape bench FILE --entry NAME [-D NAME=VALUE]... [--weights F | --random-weights SEED]\n"
    "                   [--input NAME=F.npy]... [--backend cpu|cuda|auto] [--executor "
    "eager|graph|mono|auto]\n"
    "                   [--warmup N] [--iters N] [--json] [--max-loop-trips N] [--timeout SECONDS]\n"
    "                   [--limit NAME=N]... [--bundle F] [--profile] [--buckets SPEC]...\n"
    "                   [--graph-memory MB] [--shapes NAME=LO:HI[:STEP]]\n"
    "Runs the entry repeatedly and reports min / median / p90 / p99 / mean latency (device time from\n"
    "CUDA events on the CUDA backend, wall time on the CPU), kernels launched and host\n"
    "synchronisations per call, and the device memory the session holds. --executor picks the CUDA\n"
    "executor (eager: one launch per kernel; graph: one CUDA graph launch per call; auto, the default:\n"
    "the first 8 calls alternate between the two, timed, and the faster runs from then on; see\n"
    "docs/execution.md): its decision and the timed calls behind it are printed (in the --json object\n"
    "as \"auto\"), with a note when --warmup was too short for all timed calls to come after it.\n"
    "--max-loop-trips and --timeout bound each run as for `grape run`; --limit as for `grape check`;\n"
    "--bundle as for `grape run`.\n"
    "--profile (CUDA, eager executor; with auto these calls run eager) then runs --iters more calls\n"
    "with a CUDA event before and after each kernel launch and prints every kernel's device time per\n"
    "call, its share, grid, the bytes it reads and writes and the FLOPs of its matrix products (from\n"
    "the shapes), and the GB/s and TFLOP/s they give, longest first (in the --json object as\n"
    "\"profile\"); docs/kernels.md.\n"
    "--shapes NAME=LO:HI[:STEP] runs the entry at every value of the symbolic dim NAME: the inputs\n"
    "(given at HI or more) are cut to their first VALUE entries along the axes declared NAME, and each\n"
    "value gets --warmup calls (the first timed on its own) and --iters timed calls; it prints the\n"
    "latency per value and the CUDA graphs held (count, memory, graphs rewritten for new dims).\n"
    "--buckets SPEC sets the shape buckets of the graph executor and of auto, e.g. S=pow2 (default),\n"
    "S=exact, S=16,64,256 (upper edges), several separated by ';' or given as repeated --buckets;\n"
    "--graph-memory MB caps the device memory of the graphs held (least recently used evicted;\n"
    "default 1024). docs/execution.md, \"Shape buckets\".\n";

const char* kRunUsage =
    "usage: grape run FILE [--entry NAME] [-D NAME=VALUE]...\n"
    "                 [--weights F.safetensors | --random-weights SEED]\n"
    "                 [--input NAME=F.npy]... [--output DIR] [--backend cpu|cuda|auto]\n"
    "                 [--executor eager|graph|mono|auto] [--max-loop-trips N] [--timeout SECONDS]\n"
    "                 [--limit NAME=N]... [--bundle F] [--buckets SPEC]... [--graph-memory MB]\n"
    "Runs one entry point (default: main). Inputs bind to the entry's parameters by name; symbolic\n"
    "dims come from the inputs. With --output DIR the results are written as DIR/out0.npy,\n"
    "DIR/out1.npy, ... in return order, and any other outN.npy in DIR (from an earlier run) is\n"
    "removed, so DIR holds exactly this run's results; otherwise a short summary of each result is\n"
    "printed.\n"
    "Bounds: a device loop without `max` stops with an error after --max-loop-trips trips (default\n"
    "100000, or $GRAPE_MAX_LOOP_TRIPS); --timeout stops a run after SECONDS of wall time (CUDA graph\n"
    "executor: checked only before the graph is launched). The first Ctrl-C stops the run (exit\n"
    "status 1), a second one kills the process.\n"
    "--limit NAME=N sets one of the compiler's resource limits (max_ops, max_program_elements, ...;\n"
    "docs/language.md, \"Limits\"); it may be repeated and wins over $GRAPE_LIMITS.\n"
    "--bundle F takes the CUDA kernels from F, written by `grape compile FILE --bundle F`, before the\n"
    "kernel cache or NVRTC (a bad file is an error; kernels F lacks are compiled as usual).\n";

const char* kCompileUsage =
    "usage: grape compile FILE [-D NAME=VALUE]... [--arch sm_80,sm_90] [--bundle OUT [--rows LIST]]\n"
    "                    [--limit NAME=N]...\n"
    "Generates the CUDA kernels of every entry point and compiles each with NVRTC for every target\n"
    "of --arch (comma-separated sm_NN or compute_NN; default sm_80,sm_90). Needs NVRTC, not a GPU;\n"
    "the kernel cache is not used. Prints the kernels of each entry; exits 1 if any kernel fails to\n"
    "compile or compiles with warnings, naming the entry, kernel, op and source position.\n"
    "--bundle OUT also writes every compiled kernel to the file OUT, an ahead-of-time kernel bundle:\n"
    "`grape run|bench|batch FILE --bundle OUT` (same -D values) then takes its kernels from it, with\n"
    "no NVRTC (docs/kernels.md, \"Kernel bundles\").\n"
    "--rows LIST (e.g. 1,5,8; each 1..16) also puts in the bundle, for each row count, the variants of\n"
    "the matrix products whose row count is a runtime dim (decode's batch) that a session compiles\n"
    "at its first run with that many rows; without them such a session runs the general kernels.\n"
    "--limit NAME=N sets one of the compiler's resource limits (max_ops, max_program_elements, ...;\n"
    "docs/language.md, \"Limits\"); it may be repeated and wins over $GRAPE_LIMITS.\n";

const char* kCacheUsage =
    "usage: grape cache info|clear\n"
    "info prints the kernel cache's directory, number of entries and size in bytes; clear deletes\n"
    "every entry. The cache is the folder kernels/ of $GRAPE_CACHE_DIR, else of\n"
    "$XDG_CACHE_HOME/grape, else of $HOME/.cache/grape.\n";

std::vector<std::string> entry_names(const grp_model* m) {
  std::vector<std::string> out;
  for (size_t i = 0; i < grp_model_num_entries(m); ++i) out.push_back(grp_model_entry_name(m, i));
  return out;
}

void print_error(const std::string& msg) {
  std::cerr << msg;
  if (msg.empty() || msg.back() != '\n') std::cerr << "\n";
}

int cmd_check(const Options& o) {
  if (o.files.empty()) throw UsageError("check needs at least one FILE");
  int status = 0;
  for (const auto& f : o.files) {
    try {
      ModelPtr m = load(f, o);
      std::string entries;
      for (const auto& e : entry_names(m.get())) entries += (entries.empty() ? "" : ", ") + e;
      std::cout << f << ": ok (entries: " << (entries.empty() ? "none" : entries) << ")\n";
    } catch (const ApiError& e) {
      if (e.code == GRP_ERR_OUT_OF_MEMORY) throw;
      print_error(e.message);
      status = e.code == GRP_ERR_INVALID_ARGUMENT ? 2 : std::max(status, 1);
    }
  }
  return status;
}

int cmd_ir(const Options& o) {
  if (o.files.size() != 1) throw UsageError("ir needs exactly one FILE");
  ModelPtr m = load(o.files[0], o);
  if (!o.entry.empty()) {
    auto names = entry_names(m.get());
    if (std::find(names.begin(), names.end(), o.entry) == names.end())
      throw ApiError{GRP_ERR_INVALID_ARGUMENT, "no entry point " + quoted(o.entry) + " in " + o.files[0]};
  }
  char* text = nullptr;
  check(grp_model_ir_text(m.get(), o.entry.empty() ? nullptr : o.entry.c_str(), &text));
  std::cout << text;
  grp_free(text);
  return 0;
}

std::string summarize(grp_dtype dtype, const int64_t* shape, size_t rank, const void* data) {
  std::ostringstream s;
  s << grp_dtype_name(dtype) << "[";
  int64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    s << (k ? ", " : "") << shape[k];
    n *= shape[k];
  }
  s << "]";
  if (n == 0) return s.str() + " (empty)";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = element(dtype, data, static_cast<size_t>(i));
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  s << " min " << lo << " max " << hi << " mean " << sum / static_cast<double>(n) << "  [";
  for (int64_t i = 0; i < std::min<int64_t>(n, 8); ++i)
    s << (i ? ", " : "") << element(dtype, data, static_cast<size_t>(i));
  s << (n > 8 ? ", ...]" : "]");
  return s.str();
}

// After a run wrote out0.npy .. out{n-1}.npy into dir: removes every other outN.npy there (left by
// an earlier run with more results), so that the folder holds exactly this run's results.
void remove_stale_outputs(const std::string& dir, size_t n) {
  std::error_code ec;
  std::filesystem::directory_iterator it(dir, ec), end;
  std::vector<std::filesystem::path> stale;
  for (; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= 7 || name.compare(0, 3, "out") != 0 || name.compare(name.size() - 4, 4, ".npy") != 0)
      continue;
    std::string digits = name.substr(3, name.size() - 7);
    if (digits.empty() || digits.size() > 9 || (digits.size() > 1 && digits[0] == '0') ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    if (std::stoul(digits) >= n) stale.push_back(it->path());
  }
  if (ec) throw ApiError{GRP_ERR_IO, "--output " + dir + ": cannot list the folder: " + ec.message()};
  for (const auto& p : stale) {
    std::filesystem::remove(p, ec);
    if (ec)
      throw ApiError{GRP_ERR_IO,
                     "--output: cannot remove the stale result " + p.string() + ": " + ec.message()};
  }
}

// A session of the entry with its inputs bound, shared by `run` and `bench`.
struct Prepared {
  ModelPtr model;
  SessionPtr session;
  std::vector<TensorPtr> tensors;
};

Prepared prepare(const Options& o, const char* cmd) {
  ModelPtr model = load_with_weights(o, cmd);
  SessionPtr session = open_session(model.get(), o, 0, true);
  grp_session* s = session.get();
  auto named = read_named_inputs(s, o);
  // The values in parameter order, up to the first parameter not given (the errors the library
  // reports at run time come in that order too).
  std::vector<const grp_tensor*> by_param(grp_session_num_inputs(s), nullptr);
  for (const auto& [index, t] : named) by_param[index] = t.get();
  for (size_t i = 0; i < by_param.size() && by_param[i]; ++i) {
    const grp_tensor* t = by_param[i];
    // The tensors outlive the run: bind them instead of copying.
    check(grp_session_bind_input(s, grp_session_input_name(s, i), grp_tensor_dtype(t), grp_tensor_shape(t),
                                 grp_tensor_rank(t), grp_tensor_data(t), grp_tensor_nbytes(t)));
  }
  std::vector<TensorPtr> tensors;
  for (auto& [index, t] : named) tensors.push_back(std::move(t));
  return Prepared{std::move(model), std::move(session), std::move(tensors)};
}

int cmd_run(const Options& o) {
  Prepared p = prepare(o, "run");
  grp_session* s = p.session.get();
  run_interruptibly(s);

  size_t n = grp_session_num_outputs(s);
  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec) throw ApiError{GRP_ERR_IO, "--output " + o.output_dir + ": " + ec.message()};
  }
  // Outputs go to temporary names first and are renamed only when all are written: a failure
  // leaves no partial set of outputs behind.
  std::vector<std::pair<std::string, std::string>> written;
  auto discard = [&] {
    for (const auto& [tmp, final_path] : written) std::filesystem::remove(tmp);
  };
  for (size_t i = 0; i < n; ++i) {
    grp_dtype dtype;
    const int64_t* shape;
    size_t rank, nbytes;
    const void* data;
    check(grp_session_get_output(s, i, &dtype, &shape, &rank, &data, &nbytes));
    if (o.output_dir.empty()) {
      std::cout << "out" << i << ": " << summarize(dtype, shape, rank, data) << "\n";
    } else {
      std::string path =
          (std::filesystem::path(o.output_dir) / ("out" + std::to_string(i) + ".npy")).string();
      std::string tmp =
          (std::filesystem::path(o.output_dir) / (".out" + std::to_string(i) + ".npy.partial")).string();
      grp_error* e = grp_npy_write(tmp.c_str(), dtype, shape, rank, data, nbytes);
      if (e) {
        discard();
        check(e, "--output: cannot write " + path + ": ");
      }
      written.emplace_back(tmp, path);
    }
  }
  for (const auto& [tmp, final_path] : written) {
    std::error_code ec;
    if (std::filesystem::is_directory(final_path, ec)) {
      discard();
      throw ApiError{GRP_ERR_IO, "--output: cannot write " + final_path + ": it is a directory"};
    }
  }
  for (const auto& [tmp, final_path] : written) {
    std::error_code ec;
    std::filesystem::rename(tmp, final_path, ec);
    if (ec) {
      discard();
      throw ApiError{GRP_ERR_IO, "--output: cannot write " + final_path + ": " + ec.message()};
    }
  }
  if (!o.output_dir.empty()) remove_stale_outputs(o.output_dir, n);
  return 0;
}

// `bench --profile`: per-kernel device times of `iters` more runs, longest first.
struct ProfiledKernel {
  grp_kernel_profile k;
  double us_per_call;
};

std::vector<ProfiledKernel> profile_kernels(grp_session* s, int iters, int64_t* runs) {
  check(grp_session_set_profiling(s, 1));
  for (int i = 0; i < iters; ++i) run_interruptibly(s);
  size_t count = 0;
  check(grp_session_kernel_profile(s, runs, &count));
  std::vector<ProfiledKernel> out;
  for (size_t i = 0; i < count; ++i) {
    ProfiledKernel pk;
    std::memset(&pk.k, 0, sizeof pk.k);
    pk.k.struct_size = sizeof pk.k;
    check(grp_session_kernel_profile_at(s, i, &pk.k));
    pk.us_per_call = pk.k.total_ms * 1e3 / static_cast<double>(std::max<int64_t>(1, *runs));
    out.push_back(pk);
  }
  std::stable_sort(out.begin(), out.end(), [](const ProfiledKernel& a, const ProfiledKernel& b) {
    return a.us_per_call > b.us_per_call;
  });
  return out;
}

// Rates from a kernel's per-launch bytes and FLOPs and its mean launch time.
double per_second(double amount, const grp_kernel_profile& k) {
  return k.total_ms > 0 ? amount * static_cast<double>(k.launches) / (k.total_ms * 1e-3) : 0.0;
}

std::string profile_json(const std::vector<ProfiledKernel>& ks, int64_t runs) {
  std::string j = "{\"runs\": " + std::to_string(runs) + ", \"kernels\": [";
  char buf[512];
  for (size_t i = 0; i < ks.size(); ++i) {
    const grp_kernel_profile& k = ks[i].k;
    std::snprintf(buf, sizeof buf,
                  "%s{\"name\": %s, \"op\": %s, \"where\": %s, \"grid\": %u, \"block\": %u, "
                  "\"launches\": %lld, \"us_per_call\": %.3f, \"bytes\": %.0f, \"flops\": %.0f, "
                  "\"GBps\": %.1f, \"TFLOPs\": %.3f}",
                  i ? ", " : "", json_string(k.name).c_str(), json_string(k.op).c_str(),
                  json_string(k.where).c_str(), k.grid, k.block, static_cast<long long>(k.launches),
                  ks[i].us_per_call, k.bytes, k.flops, per_second(k.bytes, k) / 1e9,
                  per_second(k.flops, k) / 1e12);
    j += buf;
  }
  return j + "]}";
}

void print_profile(const std::vector<ProfiledKernel>& ks, int64_t runs) {
  double total = 0;
  for (const ProfiledKernel& k : ks) total += k.us_per_call;
  std::printf(
      "  kernel profile: %lld calls, CUDA events around each launch; %zu kernels, %.1f us per call in "
      "kernels\n",
      static_cast<long long>(runs), ks.size(), total);
  std::printf("  %9s %6s %8s %12s %10s %8s %11s %8s  %s\n", "us/call", "share", "launches", "grid x block",
              "MB/launch", "GB/s", "GFLOP/lnch", "TFLOP/s", "kernel (op at source)");
  for (const ProfiledKernel& pk : ks) {
    const grp_kernel_profile& k = pk.k;
    std::string grid = std::to_string(k.grid) + " x " + std::to_string(k.block);
    std::printf("  %9.2f %5.1f%% %8.1f %12s %10.3f %8.0f %11.3f %8.2f  %s (%s%s%s)\n", pk.us_per_call,
                total > 0 ? 100 * pk.us_per_call / total : 0.0,
                static_cast<double>(k.launches) / static_cast<double>(std::max<int64_t>(1, runs)),
                grid.c_str(), k.bytes / 1e6, per_second(k.bytes, k) / 1e9, k.flops / 1e9,
                per_second(k.flops, k) / 1e12, k.name, k.op, *k.where ? " at " : "", k.where);
  }
}

// Latency of repeated runs: device time (CUDA events) on the CUDA backend, wall time on the CPU.
int cmd_bench(const Options& o) {
  if (!o.shapes.empty()) return cmd_bench_shapes(o);
  if (o.iters <= 0) throw UsageError("--iters must be positive");
  if (o.profile && o.executor == "graph")
    throw UsageError(
        "--profile times each kernel launch on the eager executor; it cannot be used with "
        "--executor graph");
  Prepared p = prepare(o, "bench");
  grp_session* s = p.session.get();
  bool gpu = std::string(grp_session_backend(s)) == "cuda";
  if (o.profile) check(grp_session_set_profiling(s, 0));  // fails now, not after timing, where unsupported
  for (int i = 0; i < o.warmup; ++i) run_interruptibly(s);
  std::vector<double> ms;
  grp_run_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  // Executor auto measures eager against graph on a shape's first 8 calls. The warm-up stays the
  // user's (--warmup 0 --iters 1 times one cold call): timed calls that were still part of the
  // measurement are counted and reported instead.
  const bool auto_executor = gpu && o.executor == "auto";
  const int64_t measured_before = auto_executor ? measured_calls(auto_decisions(s)) : 0;
  double wall_total = 0;
  for (int i = 0; i < o.iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    run_interruptibly(s);
    double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    wall_total += wall;
    check(grp_session_last_run_stats(s, &st));
    ms.push_back(gpu ? st.device_ms : wall);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  auto pct = [&](double q) {
    return sorted[std::min(sorted.size() - 1, static_cast<size_t>(q * (sorted.size() - 1) + 0.5))];
  };
  double mean = 0;
  for (double x : ms) mean += x / static_cast<double>(ms.size());
  std::string entry = o.entry.empty() ? "main" : o.entry;
  int64_t profiled_runs = 0;
  std::vector<ProfiledKernel> profile;
  // Before the profiled runs, which would count as the bucket's calls.
  const std::vector<AutoBucket> decisions = auto_executor ? auto_decisions(s) : std::vector<AutoBucket>{};
  const int64_t measuring_calls = measured_calls(decisions) - measured_before;
  if (o.profile) profile = profile_kernels(s, o.iters, &profiled_runs);
  if (o.json) {
    std::string auto_part;
    if (auto_executor)
      auto_part = ", \"auto\": {\"timed_calls_measuring\": " + std::to_string(measuring_calls) +
                  ", \"buckets\": " + auto_json(decisions) + "}";
    std::printf(
        "{\"file\": %s, \"entry\": %s, \"backend\": %s, \"iters\": %d, \"warmup\": %d, "
        "\"min_ms\": %.6f, \"median_ms\": %.6f, \"p90_ms\": %.6f, \"p99_ms\": %.6f, \"mean_ms\": %.6f, "
        "\"wall_mean_ms\": %.6f, \"kernels_per_call\": %lld, \"host_syncs_per_call\": %lld, "
        "\"device_bytes\": %zu, \"compile_ms\": %.3f, \"executor\": %s, \"graph_launches_per_call\": %lld, "
        "\"graphs\": %zu, \"kernels_tuned\": %zu, \"kernels_retuned\": %zu, \"tuning_ms\": %.3f, \"plan\": "
        "%s%s%s}\n",
        json_string(o.files[0]).c_str(), json_string(entry).c_str(),
        json_string(grp_session_backend(s)).c_str(), o.iters, o.warmup, sorted.front(), pct(0.5), pct(0.9),
        pct(0.99), mean, wall_total / o.iters, static_cast<long long>(st.kernels),
        static_cast<long long>(st.host_syncs), st.device_bytes, st.compile_ms,
        json_string(st.executor ? st.executor : "").c_str(), static_cast<long long>(st.graph_launches),
        st.graphs, st.kernels_tuned, st.kernels_retuned, st.tuning_ms,
        json_string(st.plan ? st.plan : "").c_str(), auto_part.c_str(),
        o.profile ? (", \"profile\": " + profile_json(profile, profiled_runs)).c_str() : "");
  } else {
    std::printf("%s --entry %s on %s, executor %s%s (%s), %d iterations after %d warm-up\n",
                o.files[0].c_str(), entry.c_str(), grp_session_backend(s), st.executor ? st.executor : "?",
                auto_executor ? " (auto)" : "", gpu ? "device time, CUDA events" : "wall time", o.iters,
                o.warmup);
    std::printf("  latency ms: min %.4f  median %.4f  p90 %.4f  p99 %.4f  mean %.4f  (wall mean %.4f)\n",
                sorted.front(), pct(0.5), pct(0.9), pct(0.99), mean, wall_total / o.iters);
    std::printf(
        "  kernels per call %lld, host syncs per call %lld, device memory %.1f MB, kernel build %.0f ms\n",
        static_cast<long long>(st.kernels), static_cast<long long>(st.host_syncs), st.device_bytes / 1e6,
        st.compile_ms);
    if (gpu) {
      std::printf("  graph launches per call %lld, graphs held %zu\n",
                  static_cast<long long>(st.graph_launches), st.graphs);
      std::printf("  autotuning: %zu kernels measured (%.0f ms), %zu launched off the heuristic's choice\n",
                  st.kernels_tuned, st.tuning_ms, st.kernels_retuned);
      if (st.plan && *st.plan) std::printf("  plan: %s\n", st.plan);
    }
    print_auto(decisions);
    if (measuring_calls > 0)
      std::printf(
          "  note: %lld of the timed calls were auto's measurement (eager and graph in turn); with\n"
          "  --warmup %lld or more every timed call runs the executor it keeps\n",
          static_cast<long long>(measuring_calls),
          static_cast<long long>(decisions.empty() ? 8 : decisions.front().calls_to_decide));
    if (o.profile) print_profile(profile, profiled_runs);
  }
  return 0;
}

// Takes ownership of a string the library returned, prints it and frees it.
void print_owned(char* text) {
  std::string s = text ? text : "";
  grp_free(text);
  std::cout << s;
  if (!s.empty() && s.back() != '\n') std::cout << "\n";
}

int cmd_compile(const Options& o) {
  if (o.files.size() != 1) throw UsageError("compile needs exactly one FILE");
  ModelPtr m = load(o.files[0], o);
  if (!o.rows.empty() && o.bundle.empty())
    throw UsageError("--rows adds row-count variants to a bundle: it needs --bundle OUT");
  char* report = nullptr;
  if (o.bundle.empty())
    check(grp_model_compile_kernels(m.get(), o.arch.c_str(), &report), o.files[0] + ": ");
  else
    check(grp_kernel_bundle_write_rows(m.get(), o.arch.c_str(), o.rows.c_str(), o.bundle.c_str(), &report),
          o.files[0] + ": ");
  std::cout << o.files[0] << ": ok\n";
  print_owned(report);
  return 0;
}

int cmd_cache(const Options& o) {
  if (o.files.size() != 1) throw UsageError("cache needs one of: info, clear");
  const std::string& what = o.files[0];
  char* text = nullptr;
  if (what == "info") {
    check(grp_cache_info(&text));
  } else if (what == "clear") {
    check(grp_cache_clear());
    check(grp_cache_info(&text));
    std::cout << "kernel cache cleared\n";
  } else {
    throw UsageError("unknown cache command " + quoted(what) + " (expected info or clear)");
  }
  print_owned(text);
  return 0;
}

int main_impl(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string cmd = args[0];
  if (cmd == "--version" || cmd == "version") {
    std::cout << "grape " << grp_version_string() << "\n";
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    std::cout << kUsage;
    return 0;
  }
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const char* usage = nullptr;
  std::vector<std::string> allowed;
  int (*fn)(const Options&) = nullptr;
  if (cmd == "check") {
    usage = kCheckUsage;
    allowed = {"-D", "--require-loop-bounds", "--limit"};
    fn = cmd_check;
  } else if (cmd == "ir") {
    usage = kIrUsage;
    allowed = {"-D", "--entry", "--no-optimize", "--limit"};
    fn = cmd_ir;
  } else if (cmd == "bench") {
    usage = kBenchUsage;
    allowed = {"-D",         "--entry",  "--weights", "--random-weights", "--input",          "--backend",
               "--executor", "--warmup", "--iters",   "--json",           "--max-loop-trips", "--timeout",
               "--limit",    "--bundle", "--profile", "--buckets",        "--graph-memory",   "--shapes"};
    fn = cmd_bench;
  } else if (cmd == "run") {
    usage = kRunUsage;
    allowed = {"-D",       "--entry",   "--weights",  "--random-weights", "--input",
               "--output", "--backend", "--executor", "--max-loop-trips", "--timeout",
               "--limit",  "--bundle",  "--buckets",  "--graph-memory"};
    fn = cmd_run;
  } else if (cmd == "batch") {
    usage = kBatchUsage;
    allowed = kBatchFlags;
    fn = cmd_batch;
  } else if (cmd == "compile") {
    usage = kCompileUsage;
    allowed = {"-D", "--arch", "--limit", "--bundle", "--rows"};
    fn = cmd_compile;
  } else if (cmd == "cache") {
    usage = kCacheUsage;
    allowed = {};
    fn = cmd_cache;
  } else {
    std::cerr << "grape: unknown command '" << cmd << "'\n\n" << kUsage;
    return 2;
  }
  try {
    Options o = parse_options(rest, allowed);
    if (o.help) {
      std::cout << usage;
      return 0;
    }
    // Commands that may build CUDA kernels show a progress line for builds over a second.
    bool builds = cmd == "run" || cmd == "bench" || cmd == "batch" || cmd == "compile";
    BuildProgressLine build_line(builds && !o.quiet);
    return fn(o);
  } catch (const UsageError& e) {
    std::cerr << "grape " << cmd << ": " << e.what() << "\n\n" << usage;
    return 2;
  } catch (const ApiError& e) {
    const std::string& msg = e.message;
    bool bare = e.rendered || msg.rfind("grape", 0) == 0 ||
                (e.code == GRP_ERR_INTERNAL && msg.rfind("internal error", 0) == 0);
    print_error((bare ? "" : "error: ") + msg);
    // Arguments that name nothing in the program (entry, input, -D) are usage errors.
    return e.code == GRP_ERR_INVALID_ARGUMENT ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace
}  // namespace grape::cli

int main(int argc, char** argv) {
  // A compile worker of a build this command started (grape.h, grp_compile_worker_main).
  if (argc >= 2 && std::strcmp(argv[1], GRP_COMPILE_WORKER_ARG) == 0)
    return grp_compile_worker_main(argc, argv);
  // Builds send their NVRTC compiles to worker processes running this executable (the path of the
  // running file, not argv[0], which need not name it); none where it cannot be found.
  {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec && !self.empty()) grp_set_compile_worker(self.c_str());
  }
  // A write past the file-size limit (ulimit -f) fails with EFBIG and is reported as an I/O
  // error (the partial file removed) instead of killing the process.
  std::signal(SIGXFSZ, SIG_IGN);
  grape::cli::install_sigint_handler();
  int status = grape::cli::main_impl(argc, argv);
  // What was printed is a result too: a full disk or a failing device under the standard output
  // is an I/O error (exit status 1), not a success.
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
    int e = errno;
    std::cerr << "error: cannot write the standard output" << (e ? std::string(": ") + std::strerror(e) : "")
              << "\n";
    return status != 0 ? status : 1;
  }
  return status;
}
