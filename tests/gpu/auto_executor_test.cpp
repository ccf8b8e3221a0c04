// The executor "auto" against the CPU reference: every control-flow case and every example entry
// at tiny sizes, each session called well past auto's decision point (8 calls per shape bucket)
// with changing inputs, so that the calls on eager, on graph and after the decision are all
// compared, states included (a state written by one executor is read by the other on the next
// call). Each call is also checked against auto's schedule (eager, graph, eager, ... for the
// first 8 calls of a bucket, then the executor it kept) and its reporting (RunStats::executor and
// auto_state, Session::auto_decisions). Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

constexpr int64_t kCallsToDecide = 8;  // runtime/cuda/auto_policy.h, AutoSchedule

const AutoDecision* find(const std::vector<AutoDecision>& ds, const std::string& bucket) {
  for (const auto& d : ds)
    if (d.bucket == bucket) return &d;
  return nullptr;
}

// After a call of an "auto" session: finds the bucket the call counted in (its `calls` grew by
// one since `before`) and checks that the call ran where the schedule says, and what is reported.
void check_auto_call(const Session& gpu, std::vector<AutoDecision>& before, const std::string& at) {
  std::vector<AutoDecision> now = gpu.auto_decisions();
  const AutoDecision* d = nullptr;
  for (const auto& x : now) {
    const AutoDecision* old = find(before, x.bucket);
    if (x.calls == (old ? old->calls : 0) + 1) d = &x;
  }
  ASSERT_NE(d, nullptr) << at << ": no bucket counted the call";
  const RunStats& st = gpu.last_run_stats();
  EXPECT_EQ(st.auto_state, d->summary()) << at;
  EXPECT_EQ(d->reason.find("the graph executor failed"), std::string::npos) << at << ": " << d->reason;
  const bool no_graph = d->reason.rfind("the graph executor is unavailable", 0) == 0;
  if (no_graph) {
    EXPECT_EQ(st.executor, "eager") << at;
  } else if (d->calls <= kCallsToDecide) {
    // Calls 1, 3, 5, 7 of a bucket run eager, 2, 4, 6, 8 graph; the 8th decides.
    EXPECT_EQ(st.executor, d->calls % 2 == 1 ? "eager" : "graph") << at << ", call " << d->calls;
    EXPECT_EQ(d->measured_calls, d->calls) << at;
    EXPECT_EQ(d->executor.empty(), d->calls < kCallsToDecide) << at << ": " << st.auto_state;
  } else {
    EXPECT_EQ(st.executor, d->executor) << at << ": " << st.auto_state;
  }
  if (st.executor == "graph") {
    EXPECT_EQ(st.host_syncs, 0) << at;
    EXPECT_EQ(st.graph_launches, 1) << at;
  } else {
    EXPECT_EQ(st.graph_launches, 0) << at;
  }
  if (!d->executor.empty() && !no_graph) {
    EXPECT_EQ(d->eager_ms.size(), 3u) << at;
    EXPECT_EQ(d->graph_ms.size(), 3u) << at;
    EXPECT_GT(d->eager_median_ms, 0) << at;
    EXPECT_GT(d->graph_median_ms, 0) << at;
    EXPECT_NE(d->reason.find(" ms vs "), std::string::npos) << d->reason;
  }
  before = std::move(now);
}

// Runs `calls` on a CPU session and a CUDA session with executor "auto"; compares every output
// and, at the end, every state; checks each call against auto's schedule. Returns the decisions.
std::vector<AutoDecision> compare_auto(const std::shared_ptr<Model>& m, const std::string& entry,
                                       const std::vector<Inputs>& calls, const std::string& what) {
  Session cpu(m, SessionOptions{entry, "cpu", "auto", 0});
  Session gpu(m, SessionOptions{entry, "cuda", "auto", 0});
  EXPECT_EQ(gpu.executor(), "auto");
  EXPECT_EQ(gpu.last_run_stats().executor, "auto");  // nothing ran yet
  std::vector<AutoDecision> seen;
  for (size_t c = 0; c < calls.size(); ++c) {
    std::string at = what + " call " + std::to_string(c);
    auto a = cpu.run(calls[c]);
    auto b = gpu.run(calls[c]);
    EXPECT_EQ(a.size(), b.size()) << at;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i)
      expect_close(a[i], b[i],
                   at + " out" + std::to_string(i) + " (on " + gpu.last_run_stats().executor + ")");
    check_auto_call(gpu, seen, at);
  }
  for (const auto& s : cpu.states()) {
    Tensor a = cpu.state(s.name), b = gpu.state(s.name);
    if (a.defined() || b.defined()) expect_close(a, b, what + " state " + s.name);
  }
  for (const auto& d : seen)
    if (d.calls >= kCallsToDecide) {
      EXPECT_FALSE(d.executor.empty()) << what << " bucket " << d.bucket;
    }
  return seen;
}

// 20 calls per case. Without state, the symbolic dims alternate between 3 and 4: two buckets of 10
// calls, each measured and decided on its own while the other is in between. With state (whose
// shapes the first call fixes), one bucket; the values change on every call either way.
TEST(AutoExecutor, ControlFlowCases) {
  REQUIRE_GPU();
  int cases = 0;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto m = Model::load_source(read_text(e.path().string()), e.path().string());
    Session probe(m, "main");
    const bool stateful = !probe.states().empty();
    std::vector<Inputs> calls;
    for (uint32_t c = 0; c < 20; ++c)
      calls.push_back(sample_inputs(probe.inputs(), c, stateful || c % 2 == 0 ? 3 : 4));
    compare_auto(m, "main", calls, e.path().filename().string());
    ++cases;
  }
  EXPECT_GE(cases, 30);
}

// Batch sizes 3 and 7 alternate: two buckets of 10 calls, each decided after its 8th.
TEST(AutoExecutor, Mlp) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  std::vector<Inputs> calls;
  for (uint32_t c = 0; c < 20; ++c) calls.push_back({{"x", sample(DType::F16, {c % 2 ? 7 : 3, 32}, c)}});
  auto ds = compare_auto(m, "main", calls, "mlp");
  EXPECT_EQ(ds.size(), 2u);
}

TEST(AutoExecutor, Bert) {
  REQUIRE_GPU();
  ModelOptions o;
  o.defines = {{"L", 2}, {"H", 64}, {"NH", 4}, {"I", 256}, {"V", 128}, {"P", 64}};
  auto m = Model::load_file(source_dir() + "/examples/bert.grp", o);
  m->set_random_weights(4);
  std::vector<Inputs> calls;
  for (uint32_t c = 0; c < 12; ++c) {
    Tensor mask(DType::Bool, {2, 6});
    for (int64_t i = 0; i < 12; ++i) mask.set(i, i % 6 < 3 + static_cast<int64_t>((i / 6 + c) % 4));
    calls.push_back({{"ids", sample(DType::I32, {2, 6}, 8 + c, 128)}, {"mask", mask}});
  }
  compare_auto(m, "forward", calls, "bert forward");
}

// Every entry of tiny GPT-2. The stateful ones (prefill, decode, decode_step, generate, the beam
// entries) carry their KV caches across calls that switch executors. Token outputs (generate,
// beam_search) are compared exactly, so their prompts are the ones the eager and graph tests use
// (tests/gpu/graph_executor_test.cpp), cycled: other prompts could meet a near-tie in argmax
// that the CPU's rounding breaks differently, which would say nothing about auto.
TEST(AutoExecutor, Gpt2EveryEntry) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  std::vector<Inputs> forward, prefill, decode, decode_step, generate, beam_prefill, beam_decode, beam_search;
  const uint32_t prompts[] = {6, 10, 11};
  const int32_t max_new[] = {8, 3, 0, 5};
  // forward: prompt lengths 5 and 3 alternate, two buckets of 10 calls.
  for (uint32_t c = 0; c < 20; ++c)
    forward.push_back({{"ids", sample(DType::I32, {2, c % 2 ? 3 : 5}, 2 + c, 128)}});
  for (uint32_t c = 0; c < 12; ++c) {
    prefill.push_back({{"ids", sample(DType::I32, {2, 4}, 30 + c, 128)}});
    decode.push_back({{"tok", sample(DType::I32, {5}, 40 + c, 128)}});
    decode_step.push_back(
        {{"tok", sample(DType::I32, {5}, 3 + c, 128)}, {"p", Tensor::scalar_i32(static_cast<int32_t>(c))}});
    generate.push_back({{"prompt", sample(DType::I32, {2, 4}, prompts[c % 3], 128)},
                        {"max_new", Tensor::scalar_i32(max_new[c % 4])}});
    beam_prefill.push_back({{"ids", sample(DType::I32, {5, 4}, 50 + c, 128)}});
    beam_decode.push_back({{"tok", sample(DType::I32, {5}, 60 + c, 128)}});
    beam_search.push_back({{"prompt", sample(DType::I32, {1, 4}, 7, 128)}});
  }
  compare_auto(m, "forward", forward, "gpt2 forward");
  compare_auto(m, "prefill", prefill, "gpt2 prefill");
  compare_auto(m, "decode", decode, "gpt2 decode");
  compare_auto(m, "decode_step", decode_step, "gpt2 decode_step");
  compare_auto(m, "generate", generate, "gpt2 generate");
  compare_auto(m, "beam_prefill", beam_prefill, "gpt2 beam_prefill");
  compare_auto(m, "beam_decode", beam_decode, "gpt2 beam_decode");
  compare_auto(m, "beam_search", beam_search, "gpt2 beam_search");
}

// What auto reports while measuring and once decided: the executor of each call, the decision
// state, the timed calls behind the decision; the decision then holds.
TEST(AutoExecutor, ReportsItsDecision) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  Session gpu(m, SessionOptions{"decode_step", "cuda", "auto", 0});
  EXPECT_EQ(gpu.executor(), "auto");
  EXPECT_TRUE(gpu.auto_decisions().empty());
  for (int c = 1; c <= 8; ++c) {
    gpu.run({{"tok", sample(DType::I32, {5}, static_cast<uint32_t>(c), 128)}, {"p", Tensor::scalar_i32(c)}});
    const RunStats& st = gpu.last_run_stats();
    EXPECT_EQ(st.executor, c % 2 ? "eager" : "graph") << "call " << c;
    if (c < 8) {
      EXPECT_EQ(st.auto_state, "measuring (" + std::to_string(c) + " of 8 calls)");
    }
  }
  std::vector<AutoDecision> ds = gpu.auto_decisions();
  ASSERT_EQ(ds.size(), 1u);
  const AutoDecision& d = ds[0];
  EXPECT_EQ(d.bucket, "B=5..8");
  ASSERT_TRUE(d.executor == "eager" || d.executor == "graph") << d.executor;
  EXPECT_EQ(d.calls, 8);
  EXPECT_EQ(d.calls_to_decide, 8);
  EXPECT_EQ(d.eager_ms.size(), 3u);
  EXPECT_EQ(d.graph_ms.size(), 3u);
  EXPECT_EQ(gpu.last_run_stats().auto_state, d.summary());
  EXPECT_EQ(d.summary().rfind(d.executor + " (" + d.executor + " ", 0), 0u) << d.summary();
  std::printf("AUTO tiny gpt2 decode_step: %s\n", d.summary().c_str());
  for (int c = 9; c <= 12; ++c) {
    gpu.run({{"tok", sample(DType::I32, {5}, static_cast<uint32_t>(c), 128)}, {"p", Tensor::scalar_i32(c)}});
    EXPECT_EQ(gpu.last_run_stats().executor, d.executor);
  }
  EXPECT_EQ(gpu.auto_decisions()[0].calls, 12);
  EXPECT_EQ(gpu.auto_decisions()[0].eager_ms, d.eager_ms);  // no more timing once decided
}

// While kernel profiling is on, auto runs eager (which measures the kernels) and does not count
// those calls towards its decision; it resumes measuring when profiling is off.
TEST(AutoExecutor, ProfilingRunsEagerAndDoesNotCount) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  Session gpu(m, SessionOptions{"forward", "cuda", "auto", 0});
  Inputs in = {{"ids", sample(DType::I32, {2, 5}, 1, 128)}};
  gpu.run(in);  // eager, measured (warm-up)
  gpu.set_profiling(true);
  for (int i = 0; i < 3; ++i) {
    gpu.run(in);
    EXPECT_EQ(gpu.last_run_stats().executor, "eager");
  }
  EXPECT_EQ(gpu.kernel_profile().runs, 3);
  gpu.set_profiling(false);
  ASSERT_EQ(gpu.auto_decisions().size(), 1u);
  EXPECT_EQ(gpu.auto_decisions()[0].calls, 4);
  EXPECT_EQ(gpu.auto_decisions()[0].measured_calls, 1);
  gpu.run(in);
  EXPECT_EQ(gpu.last_run_stats().executor, "graph");  // the schedule goes on where it was
}

}  // namespace
}  // namespace grape
