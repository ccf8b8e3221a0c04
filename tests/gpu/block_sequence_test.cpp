// Block sequences (scheduler/sequence.h) on the GPU: the same results as the CPU and as the same
// program without sequences (GRAPE_SEQUENCES=0), with fewer launches and, in the eager executor,
// no host synchronisation per trip of a loop that runs inside a sequence. Without a CUDA driver
// every test skips with a message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/jit_codegen/static_loop_program.h"

namespace grape {
namespace {

using namespace gpu_test;

// Sets GRAPE_SEQUENCES for the lifetime of the object (the executors read it per session).
struct SequencesSwitch {
  explicit SequencesSwitch(bool on) { setenv("GRAPE_SEQUENCES", on ? "1" : "0", 1); }
  ~SequencesSwitch() { unsetenv("GRAPE_SEQUENCES"); }
};

struct Outcome {
  std::vector<Tensor> out;
  RunStats stats;
};

Outcome run_once(const std::shared_ptr<Model>& m, const std::string& entry, const std::string& executor,
                 const Inputs& in, bool sequences) {
  SequencesSwitch sw(sequences);
  Session s(m, SessionOptions{entry, "cuda", executor, 0});
  s.run(in);  // a graph is built at the first call; the second shows the steady state
  Outcome o;
  o.out = s.run(in);
  o.stats = s.last_run_stats();
  return o;
}

void expect_same(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], what + " out" + std::to_string(i));
}

// Beam search's scan over its 2 x NB candidates is a device loop of about twenty small kernels and
// ten copies with a static bound: it runs as one sequence, with its neighbours.
TEST(BlockSequences, BeamSearchMatchesTheCpuWithFewerLaunches) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  const Inputs in = {{"prompt", sample(DType::I32, {1, 4}, 7, 128)}};
  Session cpu(m, SessionOptions{"beam_search", "cpu", "auto", 0});
  const std::vector<Tensor> want = cpu.run(in);
  for (const char* executor : {"eager", "graph"}) {
    SCOPED_TRACE(executor);
    const Outcome with = run_once(m, "beam_search", executor, in, true);
    const Outcome without = run_once(m, "beam_search", executor, in, false);
    expect_same(want, with.out, std::string("beam_search with sequences, ") + executor);
    expect_same(want, without.out, std::string("beam_search without sequences, ") + executor);
    // The graph takes only sequences that hold a loop or many kernels (graph_executor.cpp says why).
    if (std::string(executor) == "eager") {
      EXPECT_LT(with.stats.kernels, without.stats.kernels / 2) << "launches with and without sequences";
      EXPECT_LT(with.stats.host_syncs, without.stats.host_syncs / 2)
          << "the scan's trips no longer read their condition back";
    } else {
      EXPECT_LT(with.stats.kernels, without.stats.kernels) << "kernel nodes run with and without sequences";
      EXPECT_EQ(with.stats.host_syncs, 0);
    }
  }
}

// A loop with a static bound whose body is all small steps runs whole inside one launch,
// including a `break` (its condition computed in the body) and a predicated copy.
TEST(BlockSequences, StaticLoopWithBreakRunsInsideOneLaunch) {
  REQUIRE_GPU();
  auto m = Model::load_source(test_programs::kStaticLoop, "static_loop.grp");
  for (int n : {0, 3, 9, 20}) {
    const Inputs in = {{"x", sample(DType::F32, {6}, 3)}, {"n", Tensor::scalar_i32(n)}};
    Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
    const std::vector<Tensor> want = cpu.run(in);
    for (const char* executor : {"eager", "graph"}) {
      const std::string what = std::string(executor) + " n=" + std::to_string(n);
      const Outcome with = run_once(m, "main", executor, in, true);
      expect_same(want, with.out, what);
      EXPECT_EQ(with.stats.host_syncs, 0) << what << ": the loop's condition stays on the device";
      EXPECT_LE(with.stats.kernels, 3) << what;
    }
  }
}

// A sequence is compiled when a binding first makes it small enough, not with the kernels: a
// session that only ever runs the chain at 2048 rows never builds it (the cold build of a large
// model's entries paid for every sequence before).
TEST(BlockSequences, CompiledWhenABindingFirstMakesThemSmall) {
  REQUIRE_GPU();
  // Every row normalisation on rows of 40 (two elements a lane, the second partly masked); in a
  // sequence each warp of the one block takes two rows at once (row_norm.cuh).
  auto m = Model::load_source(R"(model chain

fn main(x: f32[B, 40], g: f32[40], b: f32[40]) -> f32[B, 40] {
  var y = softmax(x, axis=-1)
  y = log_softmax(y * 2.0, axis=-1)
  y = layer_norm(y * 3.0, g, b, eps=1e-5)
  y = rms_norm(y, g, eps=1e-6)
  return y
}
)",
                              "chain.grp");
  SequencesSwitch sw(true);
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"main", "cuda", "eager", 0});
  auto built = [&] {
    return gpu.last_run_stats().kernels_compiled + gpu.last_run_stats().kernels_from_cache;
  };
  const Tensor g = sample(DType::F32, {40}, 8), b = sample(DType::F32, {40}, 9);
  auto inputs = [&](int64_t rows, uint64_t seed) {
    return Inputs{{"x", sample(DType::F32, {rows, 40}, seed)}, {"g", g}, {"b", b}};
  };
  const Inputs large = inputs(2048, 5);
  expect_same(cpu.run(large), gpu.run(large), "2048 rows");
  EXPECT_EQ(gpu.last_run_stats().kernels, 4) << "at 2048 rows the normalisations run as four kernels";
  const size_t kernels_only = built();
  for (int64_t rows : {7, 8, 5}) {  // warps with two rows, and one row left over
    const Inputs small = inputs(rows, 6 + rows);
    expect_same(cpu.run(small), gpu.run(small), std::to_string(rows) + " rows");
    EXPECT_EQ(gpu.last_run_stats().kernels, 1) << "at " << rows << " rows the chain is one sequence";
    EXPECT_EQ(built(), kernels_only + 1) << "the sequence was built at the binding that first needed it";
  }
  expect_same(cpu.run(large), gpu.run(large), "2048 rows again");
  EXPECT_EQ(built(), kernels_only + 1) << "nothing more to build";
}

// The graph executor makes a straight-line sequence one node only when it holds many kernels: a
// chain of twelve softmaxes on 8 rows is one node, a chain of three stays three nodes.
TEST(BlockSequences, GraphTakesLongStraightSequences) {
  REQUIRE_GPU();
  auto chain = [](int n) {
    std::string src = "model chain\n\nfn main(x: f32[B, 64]) -> f32[B, 64] {\n  var y = x\n";
    for (int i = 0; i < n; ++i) src += "  y = softmax(y * " + std::to_string(i + 2) + ".0, axis=-1)\n";
    return Model::load_source(src + "  return y\n}\n", "chain.grp");
  };
  const Inputs in = {{"x", sample(DType::F32, {8, 64}, 4)}};
  for (int n : {12, 3}) {
    auto m = chain(n);
    Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
    const std::vector<Tensor> want = cpu.run(in);
    const Outcome graph = run_once(m, "main", "graph", in, true);
    expect_same(want, graph.out, "graph, " + std::to_string(n) + " softmaxes");
    setenv("GRAPE_GRAPH_SEQUENCES", "loops", 1);
    const Outcome nodes = run_once(m, "main", "graph", in, true);
    unsetenv("GRAPE_GRAPH_SEQUENCES");
    expect_same(want, nodes.out, "graph without straight sequences");
    // One node instead of n where the chain is long; the same nodes where it is short.
    EXPECT_EQ(graph.stats.kernels, nodes.stats.kernels - (n >= 8 ? n - 1 : 0)) << n << " softmaxes";
  }
}

}  // namespace
}  // namespace grape
