#include "cli/bench_shapes.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/api.h"
#include "cli/interrupt.h"

namespace grape::cli {
namespace {

struct ShapeRange {
  std::string name;
  int64_t lo = 0, hi = 0, step = 1;
};

ShapeRange parse_range(const std::string& spec) {
  auto bad = [&]() -> UsageError {
    return UsageError(
        "--shapes expects NAME=LO:HI or NAME=LO:HI:STEP with 0 <= LO <= HI and STEP >= 1, got " +
        quoted(spec));
  };
  ShapeRange r;
  size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) throw bad();
  r.name = spec.substr(0, eq);
  std::vector<int64_t> v;
  size_t pos = eq + 1;
  while (pos <= spec.size()) {
    size_t colon = spec.find(':', pos);
    std::string part = spec.substr(pos, colon == std::string::npos ? std::string::npos : colon - pos);
    char* end = nullptr;
    errno = 0;
    long long x = part.empty() ? -1 : std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || errno == ERANGE) throw bad();
    v.push_back(x);
    if (colon == std::string::npos) break;
    pos = colon + 1;
  }
  if (v.size() < 2 || v.size() > 3) throw bad();
  r.lo = v[0];
  r.hi = v[1];
  r.step = v.size() == 3 ? v[2] : 1;
  if (r.lo < 0 || r.hi < r.lo || r.step < 1 || (r.hi - r.lo) / r.step >= 100000) throw bad();
  return r;
}

// One input as given, and the axes declared with the dim being varied.
struct Given {
  size_t index = 0;
  std::string name;
  grp_dtype dtype{};
  std::vector<int64_t> shape;
  const unsigned char* data = nullptr;
  std::vector<bool> varied;
};

// The leading `value` entries along every varied axis of g, as a dense array.
std::vector<unsigned char> slice(const Given& g, int64_t value, std::vector<int64_t>& shape) {
  shape = g.shape;
  for (size_t k = 0; k < shape.size(); ++k)
    if (g.varied[k]) shape[k] = value;
  size_t elem = grp_dtype_size(g.dtype);
  size_t rank = shape.size();
  size_t total = elem;
  for (int64_t d : shape) total *= static_cast<size_t>(d);
  std::vector<unsigned char> out(total);
  if (total == 0) return out;
  // Contiguous runs: the innermost axes that are not cut.
  size_t inner = rank;
  size_t run = elem;
  while (inner > 0 && shape[inner - 1] == g.shape[inner - 1]) run *= static_cast<size_t>(shape[--inner]);
  if (inner == 0) {
    std::memcpy(out.data(), g.data, total);
    return out;
  }
  // The cut axis inner-1 contributes shape[inner-1] elements of its run.
  std::vector<size_t> src_stride(rank + 1, elem);
  for (size_t k = rank; k-- > 0;) src_stride[k] = src_stride[k + 1] * static_cast<size_t>(g.shape[k]);
  run *= static_cast<size_t>(shape[inner - 1]);
  std::vector<int64_t> idx(inner - 1, 0);
  size_t at = 0;
  for (;;) {
    size_t off = 0;
    for (size_t k = 0; k + 1 < inner; ++k) off += static_cast<size_t>(idx[k]) * src_stride[k];
    std::memcpy(out.data() + at, g.data + off, run);
    at += run;
    size_t k = inner - 1;
    while (k > 0) {
      if (++idx[k - 1] < shape[k - 1]) break;
      idx[k - 1] = 0;
      --k;
    }
    if (k == 0) break;
  }
  return out;
}

struct PerValue {
  int64_t value = 0;
  double first_ms = 0, first_wall_ms = 0, median_ms = 0, min_ms = 0;
  std::string executor;
  size_t graphs = 0, graph_bytes = 0;
  int64_t graph_updates = 0;
};

}  // namespace

int cmd_bench_shapes(const Options& o) {
  if (o.iters <= 0) throw UsageError("--iters must be positive");
  if (o.profile) throw UsageError("--profile and --shapes cannot be combined");
  ShapeRange range = parse_range(o.shapes);
  ModelPtr model = load_with_weights(o, "bench");
  SessionPtr session = open_session(model.get(), o, 0, true);
  grp_session* s = session.get();
  bool gpu = std::string(grp_session_backend(s)) == "cuda";

  auto named = read_named_inputs(s, o);
  std::vector<Given> given;
  bool any_varied = false;
  for (const auto& [index, t] : named) {
    Given g;
    g.index = index;
    g.name = grp_session_input_name(s, index);
    g.dtype = grp_tensor_dtype(t.get());
    g.shape.assign(grp_tensor_shape(t.get()), grp_tensor_shape(t.get()) + grp_tensor_rank(t.get()));
    g.data = static_cast<const unsigned char*>(grp_tensor_data(t.get()));
    size_t rank = 0;
    const char* const* exprs = nullptr;
    check(grp_session_input_info(s, index, nullptr, &rank, nullptr, &exprs));
    if (rank != g.shape.size())
      throw ApiError{GRP_ERR_TYPE, "--input " + g.name + " has rank " + std::to_string(g.shape.size()) +
                                       ", the entry declares " + std::to_string(rank)};
    g.varied.assign(rank, false);
    for (size_t k = 0; k < rank; ++k) {
      if (range.name != exprs[k]) continue;
      g.varied[k] = true;
      any_varied = true;
      if (g.shape[k] < range.hi)
        throw UsageError("--shapes " + o.shapes + ": --input " + g.name + " has " +
                         std::to_string(g.shape[k]) + " entries along axis " + std::to_string(k) +
                         " (declared " + range.name + "); give at least " + std::to_string(range.hi) +
                         " (each call takes the first " + range.name + ")");
    }
    given.push_back(std::move(g));
  }
  if (!any_varied)
    throw UsageError("--shapes " + o.shapes + ": no --input has an axis declared as " + range.name +
                     " (the inputs are cut to each value along such axes)");

  grp_run_stats st;
  std::memset(&st, 0, sizeof st);
  st.struct_size = sizeof st;
  std::vector<PerValue> rows;
  for (int64_t v = range.lo; v <= range.hi; v += range.step) {
    for (const Given& g : given) {
      std::vector<int64_t> shape;
      std::vector<unsigned char> bytes = slice(g, v, shape);
      check(grp_session_set_input(s, g.name.c_str(), g.dtype, shape.data(), shape.size(), bytes.data(),
                                  bytes.size()),
            "--shapes " + range.name + "=" + std::to_string(v) + ": ");
    }
    PerValue r;
    r.value = v;
    auto t0 = std::chrono::steady_clock::now();
    run_interruptibly(s);
    r.first_wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    check(grp_session_last_run_stats(s, &st));
    r.first_ms = gpu ? st.device_ms : r.first_wall_ms;
    r.graph_updates = st.graph_updates;
    for (int i = 1; i < o.warmup; ++i) run_interruptibly(s);
    std::vector<double> ms;
    for (int i = 0; i < o.iters; ++i) {
      auto t1 = std::chrono::steady_clock::now();
      run_interruptibly(s);
      double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count();
      check(grp_session_last_run_stats(s, &st));
      ms.push_back(gpu ? st.device_ms : wall);
    }
    std::sort(ms.begin(), ms.end());
    r.median_ms = ms[ms.size() / 2];
    r.min_ms = ms.front();
    r.executor = st.executor ? st.executor : "";
    r.graphs = st.graphs;
    r.graph_bytes = st.graph_bytes;
    rows.push_back(r);
  }

  std::string entry = o.entry.empty() ? "main" : o.entry;
  if (o.json) {
    std::string list;
    for (const PerValue& r : rows) {
      char buf[512];
      std::snprintf(buf, sizeof buf,
                    "{\"value\": %lld, \"first_ms\": %.6f, \"first_wall_ms\": %.6f, \"median_ms\": %.6f, "
                    "\"min_ms\": %.6f, \"executor\": %s, \"graphs\": %zu, \"graph_bytes\": %zu, "
                    "\"graph_updates\": %lld}",
                    static_cast<long long>(r.value), r.first_ms, r.first_wall_ms, r.median_ms, r.min_ms,
                    json_string(r.executor).c_str(), r.graphs, r.graph_bytes,
                    static_cast<long long>(r.graph_updates));
      list += (list.empty() ? "" : ", ") + std::string(buf);
    }
    std::printf(
        "{\"file\": %s, \"entry\": %s, \"backend\": %s, \"executor\": %s, \"buckets\": %s, \"dim\": %s, "
        "\"iters\": %d, \"warmup\": %d, \"shapes\": [%s], \"graphs\": %zu, \"graph_bytes\": %zu, "
        "\"device_bytes\": %zu}\n",
        json_string(o.files[0]).c_str(), json_string(entry).c_str(),
        json_string(grp_session_backend(s)).c_str(), json_string(o.executor).c_str(),
        json_string(o.buckets).c_str(), json_string(range.name).c_str(), o.iters, o.warmup, list.c_str(),
        st.graphs, st.graph_bytes, st.device_bytes);
  } else {
    std::printf(
        "%s --entry %s on %s, executor %s, %s from %lld to %lld (%s), %d iterations after %d warm-up each\n",
        o.files[0].c_str(), entry.c_str(), grp_session_backend(s), o.executor.c_str(), range.name.c_str(),
        static_cast<long long>(range.lo), static_cast<long long>(range.hi),
        gpu ? "device time, CUDA events" : "wall time", o.iters, o.warmup);
    std::printf("  %8s %10s %12s %10s %10s %8s %7s %12s\n", range.name.c_str(), "first ms", "first wall",
                "median", "min", "executor", "graphs", "graph MB");
    for (const PerValue& r : rows)
      std::printf("  %8lld %10.4f %12.4f %10.4f %10.4f %8s %7zu %12.2f%s\n", static_cast<long long>(r.value),
                  r.first_ms, r.first_wall_ms, r.median_ms, r.min_ms, r.executor.c_str(), r.graphs,
                  r.graph_bytes / 1048576.0, r.graph_updates ? "  (graph rewritten)" : "");
    std::printf("  graphs held at the end %zu (%.2f MB), session device memory %.1f MB\n", st.graphs,
                st.graph_bytes / 1048576.0, st.device_bytes / 1e6);
  }
  return 0;
}

}  // namespace grape::cli
