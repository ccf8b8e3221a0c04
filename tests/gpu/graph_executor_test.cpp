// The plan-driven executors against the CPU reference: every control-flow case and example under
// "eager" and "graph", sessions called many times with changing inputs and shapes, the graph
// executor's promises (one graph launch, no host synchronisation per call, parameter blocks
// uploaded only when they change), loops without a bound, and a timing of eager against graph.
// Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "runtime/model.h"
#include "runtime/shape_buckets.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

// Compares with the CPU; the graph executor must launch one graph and never synchronise the host.
void compare(const std::shared_ptr<Model>& m, const std::string& entry, const std::vector<Inputs>& calls,
             const std::string& executor, const std::string& what) {
  compare_with_cpu(m, entry, calls, executor, what, [&](const RunStats& st, const std::string& at) {
    if (executor == "graph") {
      EXPECT_EQ(st.host_syncs, 0) << at;
      EXPECT_EQ(st.graph_launches, 1) << at;
    }
  });
}

class Executors : public ::testing::TestWithParam<std::string> {};

TEST_P(Executors, ControlFlowCases) {
  REQUIRE_GPU();
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto m = Model::load_source(read_text(e.path().string()), e.path().string());
    Session probe(m, "main");
    std::vector<Inputs> calls;
    // Symbolic dims change between calls: 3, 4, 3, 2.
    for (uint32_t c = 0; c < 4; ++c)
      calls.push_back(sample_inputs(probe.inputs(), c, c == 1 ? 4 : c == 3 ? 2 : 3));
    // States keep the shapes of the first call: sessions with state get fixed shapes.
    if (!probe.states().empty())
      for (auto& call : calls) call = calls[0];
    compare(m, "main", calls, GetParam(), e.path().filename().string());
  }
}

TEST_P(Executors, Mlp) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  compare(m, "main",
          {{{"x", sample(DType::F16, {3, 32}, 1)}},
           {{"x", sample(DType::F16, {7, 32}, 2)}},
           {{"x", sample(DType::F16, {3, 32}, 3)}}},
          GetParam(), "mlp");
}

// Outputs are shared tensors of pinned host memory: they stay readable after their session (and
// the last Device holding the primary context) is gone. They used to point into a released
// context and reading them crashed.
TEST_P(Executors, OutputsOutliveTheirSession) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  const Inputs in = {{"x", sample(DType::F16, {3, 32}, 1)}};
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  std::vector<Tensor> kept;
  {
    Session gpu(m, SessionOptions{"main", "cuda", GetParam(), 0});
    kept = gpu.run(in);
  }
  const auto want = cpu.run(in);
  ASSERT_EQ(kept.size(), want.size());
  for (size_t i = 0; i < kept.size(); ++i) expect_close(want[i], kept[i], "kept output " + std::to_string(i));
}

TEST_P(Executors, Bert) {
  REQUIRE_GPU();
  ModelOptions o;
  o.defines = {{"L", 2}, {"H", 64}, {"NH", 4}, {"I", 256}, {"V", 128}, {"P", 64}};
  auto m = Model::load_file(source_dir() + "/examples/bert.grp", o);
  m->set_random_weights(4);
  Tensor mask(DType::Bool, {2, 6});
  for (int64_t i = 0; i < 12; ++i) mask.set(i, i % 6 < 4 + (i / 6));
  compare(m, "forward", {{{"ids", sample(DType::I32, {2, 6}, 8, 128)}, {"mask", mask}}}, GetParam(),
          "bert forward");
}

TEST_P(Executors, Gpt2EveryEntry) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  const std::string ex = GetParam();
  compare(m, "forward",
          {{{"ids", sample(DType::I32, {2, 5}, 2, 128)}}, {{"ids", sample(DType::I32, {2, 3}, 9, 128)}}}, ex,
          "gpt2 forward");
  compare(m, "decode_step", decode_step_calls(), ex, "gpt2 decode_step");
  compare(m, "generate",
          {{{"prompt", sample(DType::I32, {2, 4}, 6, 128)}, {"max_new", Tensor::scalar_i32(8)}},
           {{"prompt", sample(DType::I32, {2, 4}, 10, 128)}, {"max_new", Tensor::scalar_i32(3)}},
           {{"prompt", sample(DType::I32, {2, 4}, 11, 128)}, {"max_new", Tensor::scalar_i32(0)}}},
          ex, "gpt2 generate");
  compare(m, "beam_search", {{{"prompt", sample(DType::I32, {1, 4}, 7, 128)}}}, ex, "gpt2 beam_search");
}

// generate with a new prompt length on each call of one session: the state is reset between
// calls (its shape follows the prompt); each length binds anew (the graph executor: its bucket's
// graph, rewritten for the length).
TEST_P(Executors, Gpt2GenerateChangingShapes) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  Session cpu(m, SessionOptions{"generate", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"generate", "cuda", GetParam(), 0});
  int c = 0;
  for (int64_t s : {4, 2, 6, 4, 2}) {
    Inputs in = {{"prompt", sample(DType::I32, {2, s}, 20 + static_cast<uint32_t>(c), 128)},
                 {"max_new", Tensor::scalar_i32(6)}};
    auto a = cpu.run(in);
    auto b = gpu.run(in);
    expect_close(a[0], b[0], "generate S=" + std::to_string(s));
    cpu.reset_state();
    gpu.reset_state();
    ++c;
  }
}

INSTANTIATE_TEST_SUITE_P(Plan, Executors, ::testing::Values("eager", "graph"));

// Same dims, new input values: only the inputs move; the parameter blocks stay on the device.
TEST(GraphExecutor, ParameterBlocksUploadOnlyWhenTheyChange) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  Session gpu(m, SessionOptions{"forward", "cuda", "graph", 0});
  gpu.run({{"ids", sample(DType::I32, {2, 5}, 1, 128)}});
  EXPECT_EQ(gpu.last_run_stats().param_uploads, 1);
  EXPECT_EQ(gpu.last_run_stats().graphs, 1u);
  gpu.run({{"ids", sample(DType::I32, {2, 5}, 2, 128)}});
  EXPECT_EQ(gpu.last_run_stats().param_uploads, 0);
  EXPECT_EQ(gpu.last_run_stats().graphs, 1u);
  gpu.run({{"ids", sample(DType::I32, {2, 3}, 3, 128)}});
  EXPECT_EQ(gpu.last_run_stats().param_uploads, 1);
  EXPECT_EQ(gpu.last_run_stats().graphs, 2u);
}

// A wide tile variant is built when a binding first needs it, after the session started: the run
// statistics count it (they used to keep the counts of session start).
TEST(GraphExecutor, RunStatsCountWideVariantsBuiltAtFirstUse) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
weights { w: f16[512, 256] }
fn main(x: f16[M, 256]) -> f16[M, 512] {
  return linear(x, w)
}
)",
                              "wide.grp");
  m->set_random_weights(3);
  for (const char* executor : {"eager", "graph"}) {
    Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
    gpu.run({{"x", sample(DType::F16, {16, 256}, 1)}});  // 16 rows: no wide tiles
    const RunStats small = gpu.last_run_stats();
    const size_t before = small.kernels_compiled + small.kernels_from_cache;
    EXPECT_GE(before, 1u) << executor;
    gpu.run({{"x", sample(DType::F16, {8192, 256}, 2)}});  // 64 x 4 tiles of 128: wide
    const RunStats big = gpu.last_run_stats();
    EXPECT_EQ(big.kernels_compiled + big.kernels_from_cache, before + 1) << executor;
    EXPECT_GE(big.compile_ms, small.compile_ms) << executor;
  }
}

// A loop without `max` stops at the run-time cap with an error, and the session stays usable.
// Shape buckets: one graph per bucket of S (pow2 by default), rewritten in place when a call
// brings other dims of the same bucket; every call compared with the CPU. Prefill has no loops;
// generate's loops are conditional WHILE nodes, whose body nodes are rewritten too.
TEST(GraphExecutor, ShapeBucketsServeChangingDimsWithOneGraphEach) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  Session cpu(m, SessionOptions{"prefill", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"prefill", "cuda", "graph", 0});
  ShapeBuckets pow2;
  std::set<std::string> buckets;
  std::map<std::string, int64_t> last_of_bucket;
  int c = 0;
  for (int64_t s : {5, 6, 7, 8, 5, 5, 3, 4, 1, 2, 8, 12, 16, 9, 33, 64, 40}) {
    std::string at = "prefill S=" + std::to_string(s) + " (call " + std::to_string(c) + ")";
    Inputs in = {{"ids", sample(DType::I32, {1, s}, 40 + static_cast<uint32_t>(c++), 128)}};
    auto a = cpu.run(in);
    auto b = gpu.run(in);
    expect_close(a[0], b[0], at);
    std::string key = pow2.key({{"B", 1}, {"S", s}});
    bool seen = buckets.count(key) > 0;
    bool same_dims = seen && last_of_bucket[key] == s;
    buckets.insert(key);
    last_of_bucket[key] = s;
    RunStats st = gpu.last_run_stats();
    EXPECT_EQ(st.graphs, buckets.size()) << at;
    EXPECT_EQ(st.graph_updates, seen && !same_dims ? 1 : 0) << at;
    EXPECT_EQ(st.graph_launches, 1) << at;
    EXPECT_EQ(st.host_syncs, 0) << at;
  }
  EXPECT_EQ(buckets.size(), 6u);  // 1, 2, 3..4, 5..8, 9..16, 33..64
  for (const auto& st : cpu.states()) {
    Tensor a = cpu.state(st.name), b = gpu.state(st.name);
    if (a.defined() || b.defined()) expect_close(a, b, "prefill state " + st.name);
  }

  // generate: a bucket of prompt lengths 3..4 (and B = 2) serves both lengths with one graph.
  Session cpu_g(m, SessionOptions{"generate", "cpu", "auto", 0});
  Session gpu_g(m, SessionOptions{"generate", "cuda", "graph", 0});
  c = 0;
  for (int64_t s : {3, 4, 3, 4, 4}) {
    std::string at = "generate S=" + std::to_string(s) + " (call " + std::to_string(c) + ")";
    Inputs in = {{"prompt", sample(DType::I32, {2, s}, 60 + static_cast<uint32_t>(c), 128)},
                 {"max_new", Tensor::scalar_i32(5 + c % 3)}};
    auto a = cpu_g.run(in);
    auto b = gpu_g.run(in);
    expect_close(a[0], b[0], at);
    RunStats st = gpu_g.last_run_stats();
    EXPECT_EQ(st.graphs, 1u) << at;
    EXPECT_EQ(st.graph_updates, c == 0 || c == 4 ? 0 : 1) << at;
    EXPECT_EQ(st.host_syncs, 0) << at;
    cpu_g.reset_state();
    gpu_g.reset_state();
    ++c;
  }
}

// Exact buckets give one graph per value; a tiny memory budget keeps one graph at a time and the
// results stay right (an evicted bucket is built again).
TEST(GraphExecutor, ExactBucketsAndAGraphMemoryBudget) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  SessionOptions exact{"prefill", "cuda", "graph", 0};
  exact.buckets = "S=exact";
  SessionOptions small{"prefill", "cuda", "graph", 0};
  small.graph_memory_bytes = 1;
  Session cpu(m, SessionOptions{"prefill", "cpu", "auto", 0});
  Session a(m, exact), b(m, small);
  std::set<int64_t> values;
  int c = 0;
  for (int64_t s : {3, 4, 7, 3, 9, 4}) {
    std::string at = "prefill S=" + std::to_string(s);
    Inputs in = {{"ids", sample(DType::I32, {1, s}, 80 + static_cast<uint32_t>(c++), 128)}};
    auto want = cpu.run(in);
    expect_close(want[0], a.run(in)[0], at + " (exact buckets)");
    expect_close(want[0], b.run(in)[0], at + " (1-byte graph budget)");
    bool seen = values.count(s) > 0;
    values.insert(s);
    EXPECT_EQ(a.last_run_stats().graphs, values.size()) << at;
    // A value seen before reuses its graph; its nodes are rewritten only because the arena grew
    // for S = 7 and 9 since (new addresses), never for other dims.
    if (!seen) {
      EXPECT_EQ(a.last_run_stats().graph_updates, 0) << at;
    }
    EXPECT_EQ(b.last_run_stats().graphs, 1u) << at;
  }
  EXPECT_GT(a.last_run_stats().graph_bytes, 0u);
  SessionOptions bad{"prefill", "cuda", "graph", 0};
  bad.buckets = "S=8,4";
  EXPECT_THROW(Session(m, bad), Error);
}

TEST(GraphExecutor, UnboundedLoopHitsTheTripCap) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var v = x
  var i = 0
  while i < n {
    v = v + 1.0
    i = i + 1
  }
  return v
}
)",
                              "unbounded.grp");
  for (const char* ex : {"eager", "graph"}) {
    SCOPED_TRACE(ex);
    SessionOptions cpu_capped{"main", "cpu", "auto", 0};
    cpu_capped.max_loop_trips = 50;
    Session cpu(m, cpu_capped);
    SessionOptions capped{"main", "cuda", ex, 0};
    capped.max_loop_trips = 50;
    Session gpu(m, capped);
    Inputs ok = {{"x", sample(DType::F32, {4}, 1)}, {"n", Tensor::scalar_i32(20)}};
    Inputs runaway = {{"x", sample(DType::F32, {4}, 1)}, {"n", Tensor::scalar_i32(1000)}};
    std::string cpu_message;
    try {
      cpu.run(runaway);
    } catch (const Error& e) {
      cpu_message = e.what();
    }
    try {
      gpu.run(runaway);
      ADD_FAILURE() << "no error for a loop past the cap";
    } catch (const Error& e) {
      // The same message as the CPU's: the loop's position first (unbounded.grp:5:3: error: ...).
      EXPECT_EQ(std::string(e.what()), cpu_message);
      EXPECT_EQ(std::string(e.what()).rfind("unbounded.grp:5:3: error: the loop has no `max` bound", 0), 0u)
          << e.what();
    }
    expect_close(cpu.run(ok)[0], gpu.run(ok)[0], "after the cap");
  }
}

// A run stopped by the trip cap leaves the states as they were, on both executors. The eager
// executor stops on the host before the commit phase; the graph executor puts the commit phase
// under a conditional IF node that grape_commit_gate opens only when no loop reached its cap.
TEST(GraphExecutor, TripCapLeavesStatesAsTheyWere) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
state s: f32[4] = zeros
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var v = x
  var i = 0
  while i < n {
    v = v + 1.0
    i = i + 1
  }
  s = s + v
  return v
}
)",
                              "capped_state.grp");
  for (const char* ex : {"eager", "graph"}) {
    SCOPED_TRACE(ex);
    Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
    SessionOptions capped{"main", "cuda", ex, 0};
    capped.max_loop_trips = 50;
    Session gpu(m, capped);
    Inputs ok = {{"x", sample(DType::F32, {4}, 1)}, {"n", Tensor::scalar_i32(20)}};
    Inputs runaway = {{"x", sample(DType::F32, {4}, 2)}, {"n", Tensor::scalar_i32(1000)}};
    expect_close(cpu.run(ok)[0], gpu.run(ok)[0], "first run");
    expect_close(cpu.state("s"), gpu.state("s"), "the state after the first run");
    try {
      gpu.run(runaway);
      ADD_FAILURE() << "no error for a loop past the cap";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no `max` bound"), std::string::npos) << e.what();
    }
    expect_close(cpu.state("s"), gpu.state("s"), "the state after the capped run (must be unchanged)");
    expect_close(cpu.run(ok)[0], gpu.run(ok)[0], "after the cap");
    expect_close(cpu.state("s"), gpu.state("s"), "the state after the next run");
  }
}

double median_ms(Session& s, const Inputs& in, int iters) {
  for (int i = 0; i < 3; ++i) s.run(in);
  std::vector<double> ms;
  for (int i = 0; i < iters; ++i) {
    s.run(in);
    ms.push_back(s.last_run_stats().device_ms);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

// Not a pass/fail test: prints eager against graph (device time per call, CUDA events, median of
// 20) for tiny GPT-2 entries and a chain of 100 dependent kernels.
// Whether a CUDA tool (compute-sanitizer, a profiler) is in this process: its injection variable
// (the tool may clear it once loaded) or a sanitizer library among the mapped files.
bool under_cuda_tool() {
  if (std::getenv("CUDA_INJECTION64_PATH")) return true;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("sanitizer") != std::string::npos || line.find("Injection") != std::string::npos)
      return true;
  return false;
}

// A predicated region of 40 kernels (an `if` around a chain) is a conditional IF node: with the
// predicate false the graph skips it (far less device time than with it true; the eager executor
// launches all 40 and each returns at once), and either way the results are the CPU's.
TEST(GraphExecutor, LargePredicatedRegionIsAConditionalIfNode) {
  REQUIRE_GPU();
  std::string src = "fn main(x: f32[8, 64], go: bool[]) -> f32[8, 64] {\n  var y = x\n  if go {\n";
  for (int i = 0; i < 40; ++i) src += "    y = softmax(y * 3.0, axis=-1)\n";
  src += "  }\n  return y\n}\n";
  auto m = Model::load_source(src, "if_region.grp");
  Inputs on = {{"x", sample(DType::F32, {8, 64}, 5)}, {"go", Tensor::scalar_bool(true)}};
  Inputs off = {{"x", sample(DType::F32, {8, 64}, 5)}, {"go", Tensor::scalar_bool(false)}};
  compare(m, "main", {on, off, off, on, off}, "graph", "if_region");
  Session graph(m, SessionOptions{"main", "cuda", "graph", 0});
  double t_on = median_ms(graph, on, 30), t_off = median_ms(graph, off, 30);
  EXPECT_EQ(graph.last_run_stats().graphs, 1u);
  std::printf("TIMING if region of 40 kernels: taken %.4f ms, skipped %.4f ms\n", t_on, t_off);
  // Under compute-sanitizer every launch costs milliseconds and the times say nothing (runs 33 and
  // 37: 4.2 and 5.6 ms taken, 3.8 and 5.2 skipped); the results above still count.
  if (under_cuda_tool()) GTEST_SKIP() << "timing not checked under compute-sanitizer or another CUDA tool";
  EXPECT_LT(t_off, 0.5 * t_on) << "the skipped region still costs its kernels";
}

TEST(GraphExecutor, TimingEagerAgainstGraph) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  struct Case {
    std::string entry;
    Inputs in;
  };
  std::vector<Case> cases = {
      {"decode_step", {{"tok", sample(DType::I32, {5}, 3, 128)}, {"p", Tensor::scalar_i32(3)}}},
      {"generate", {{"prompt", sample(DType::I32, {2, 4}, 6, 128)}, {"max_new", Tensor::scalar_i32(8)}}},
      {"beam_search", {{"prompt", sample(DType::I32, {1, 4}, 7, 128)}}},
  };
  for (const auto& c : cases) {
    Session eager(m, SessionOptions{c.entry, "cuda", "eager", 0});
    Session graph(m, SessionOptions{c.entry, "cuda", "graph", 0});
    double e = median_ms(eager, c.in, 20), g = median_ms(graph, c.in, 20);
    RunStats se = eager.last_run_stats(), sg = graph.last_run_stats();
    std::printf(
        "TIMING tiny gpt2 %-12s eager %8.3f ms (%lld kernels, %lld syncs)  graph %8.3f ms (%lld kernels, "
        "%lld syncs, "
        "%lld graph launch)  speedup %.2fx\n",
        c.entry.c_str(), e, static_cast<long long>(se.kernels), static_cast<long long>(se.host_syncs), g,
        static_cast<long long>(sg.kernels), static_cast<long long>(sg.host_syncs),
        static_cast<long long>(sg.graph_launches), e / g);
  }
  std::string chain = "fn main(x: f32[8, 64]) -> f32[8, 64] {\n  var y = x\n";
  for (int i = 0; i < 100; ++i) chain += "  y = softmax(y, axis=-1)\n";
  chain += "  return y\n}\n";
  auto cm = Model::load_source(chain, "chain.grp");
  Inputs in = {{"x", sample(DType::F32, {8, 64}, 5)}};
  Session eager(cm, SessionOptions{"main", "cuda", "eager", 0});
  Session graph(cm, SessionOptions{"main", "cuda", "graph", 0});
  Session cpu(cm, SessionOptions{"main", "cpu", "auto", 0});
  expect_close(cpu.run(in)[0], graph.run(in)[0], "chain");
  double e = median_ms(eager, in, 50), g = median_ms(graph, in, 50);
  std::printf(
      "TIMING chain of %lld kernels: eager %.3f ms (%.2f us per op boundary)  graph %.3f ms (%.2f us per op "
      "boundary)\n",
      static_cast<long long>(graph.last_run_stats().kernels), e, e * 1000 / 100, g, g * 1000 / 100);
}

}  // namespace
}  // namespace grape
