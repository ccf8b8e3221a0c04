// Per-kernel device times (`grape bench --profile`, Session::set_profiling): the eager executor
// times every launch with CUDA events; the figures add up to no more than the runs' device time,
// loop bodies count one launch per trip, and the other executors and the CPU backend say they do
// not profile. Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <string>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

TEST(KernelProfile, EagerTimesEveryLaunchOfEveryRun) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  Session s(m, SessionOptions{"main", "cuda", "eager", 0});
  Inputs in = {{"x", sample(DType::F16, {3, 32}, 1)}};
  s.run(in);  // not profiled
  s.set_profiling(true);
  double device_ms = 0;
  int64_t kernels = 0;
  for (int i = 0; i < 4; ++i) {
    s.run(in);
    device_ms += s.last_run_stats().device_ms;
    kernels += s.last_run_stats().kernels;
  }
  ProfileReport r = s.kernel_profile();
  EXPECT_EQ(r.runs, 4);
  ASSERT_FALSE(r.kernels.empty());
  int64_t launches = 0;
  double kernel_ms = 0, flops = 0;
  for (const KernelProfile& k : r.kernels) {
    SCOPED_TRACE(k.name);
    EXPECT_EQ(k.launches, 4);
    EXPECT_GT(k.total_ms, 0);
    EXPECT_GT(k.bytes, 0);
    EXPECT_GT(k.grid, 0u);
    EXPECT_GT(k.block, 0u);
    EXPECT_FALSE(k.op.empty());
    EXPECT_EQ(k.where.rfind(source_dir() + "/examples/mlp.grp:", 0), 0u) << k.where;
    launches += k.launches;
    kernel_ms += k.total_ms;
    flops += k.flops;
  }
  EXPECT_EQ(launches, kernels);
  // Each launch's events lie inside its run's, on one stream: the sum cannot exceed the runs' time.
  EXPECT_LE(kernel_ms, device_ms * 1.001 + 1e-3);
  // mlp: two products of 3 rows (32 -> 64 -> 32 by default C) at least.
  EXPECT_GE(flops, 2.0 * 3 * 64 * 32);

  s.set_profiling(true);  // clears
  EXPECT_EQ(s.kernel_profile().runs, 0);
  EXPECT_TRUE(s.kernel_profile().kernels.empty());
  s.set_profiling(false);
  s.run(in);
  EXPECT_EQ(s.kernel_profile().runs, 0);
}

TEST(KernelProfile, LoopBodiesCountOneLaunchPerTrip) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var v = x
  var i = 0
  while i < n {
    v = exp(v * 0.5) + 1.0
    i = i + 1
  }
  return v
}
)",
                              "loop.grp");
  Session s(m, SessionOptions{"main", "cuda", "eager", 0});
  s.set_profiling(true);
  s.run({{"x", sample(DType::F32, {4}, 1)}, {"n", Tensor::scalar_i32(7)}});
  s.run({{"x", sample(DType::F32, {4}, 2)}, {"n", Tensor::scalar_i32(3)}});
  ProfileReport r = s.kernel_profile();
  EXPECT_EQ(r.runs, 2);
  int64_t most = 0;
  for (const KernelProfile& k : r.kernels) most = std::max(most, k.launches);
  EXPECT_EQ(most, 10) << "the body's kernel runs once per trip: 7 + 3";
}

TEST(KernelProfile, OnlyTheEagerExecutorProfiles) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  Session g(m, SessionOptions{"main", "cuda", "graph", 0});
  try {
    g.set_profiling(true);
    ADD_FAILURE() << "the graph executor accepted profiling";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("eager executor"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grape
