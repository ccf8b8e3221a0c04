// Per-kernel device times (`grape bench --profile`, Session::set_profiling): the eager executor
// times every launch with CUDA events; the figures add up to no more than the runs' device time,
// loop bodies count one launch per trip, and the other executors and the CPU backend say they do
// not profile. Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

// GRAPE_KERNEL_TIMELINE=FILE (DeviceProgram::timeline_write): a session built while it is set stamps
// every kernel launch; after each run FILE holds one line per kernel, earliest start first, whose
// stamps are ordered (start <= first past the wait <= last past the wait <= end; phase marks
// between the first wait and the end), under both the
// eager and the graph executor; results are the CPU's. A session built without it writes nothing.
TEST(KernelTimeline, EveryKernelOfARunInOrder) {
  REQUIRE_GPU();
  const std::string file = testing::TempDir() + "grape_kernel_timeline.txt";
  auto m = tiny_mlp();
  const Inputs in = {{"x", sample(DType::F16, {3, 32}, 1)}};
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  const auto want = cpu.run(in);
  for (const char* executor : {"eager", "graph"}) {
    SCOPED_TRACE(executor);
    std::remove(file.c_str());
    ::setenv("GRAPE_KERNEL_TIMELINE", file.c_str(), 1);
    Session s(m, SessionOptions{"main", "cuda", executor, 0});
    ::unsetenv("GRAPE_KERNEL_TIMELINE");
    for (int run = 0; run < 2; ++run) {
      ::setenv("GRAPE_KERNEL_TIMELINE", file.c_str(), 1);
      const auto got = s.run(in);
      ::unsetenv("GRAPE_KERNEL_TIMELINE");
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) expect_close(want[i], got[i], "timeline run");
      std::ifstream f(file);
      ASSERT_TRUE(f) << file;
      std::string header;
      std::getline(f, header);
      EXPECT_EQ(header.rfind("# main: ", 0), 0u) << header;
      std::string line;
      int lines = 0, marked = 0;
      double last_start = -1;
      while (std::getline(f, line)) {
        SCOPED_TRACE(line);
        std::istringstream ls(line);
        std::string start, first, last, end;
        ls >> start >> first >> last >> end;
        const double t0 = std::stod(start), t3 = std::stod(end);
        EXPECT_GE(t0, last_start);
        EXPECT_LE(t0, t3);
        if (first != "-") {
          EXPECT_LE(t0, std::stod(first));
          EXPECT_LE(std::stod(first), std::stod(last));
          EXPECT_LE(std::stod(last), t3);
        }
        // Phase marks (a template's GRAPE_TIMELINE_MARK), where present: each set one past the
        // first block's wait and before the last block's end.
        std::string marks;
        ls >> marks;
        if (marks.rfind("m=", 0) == 0) {
          ++marked;
          std::istringstream ms(marks.substr(2));
          std::string mark;
          int n = 0;
          while (std::getline(ms, mark, ',')) {
            ++n;
            if (mark == "-") continue;
            EXPECT_LE(std::stod(first), std::stod(mark));
            EXPECT_LE(std::stod(mark), t3);
          }
          EXPECT_EQ(n, 4);
        }
        EXPECT_NE(line.find("kernel "), std::string::npos);
        last_start = t0;
        ++lines;
      }
      // Every launch of a generated kernel (block sequences and control kernels carry no stamps).
      EXPECT_GE(lines, 2);
      EXPECT_LE(lines, s.last_run_stats().kernels);
      EXPECT_GE(marked, 1) << "the norm + matrix product (gemv_mma.cuh) marks its phases";
    }
  }
  std::remove(file.c_str());
  Session plain(m, SessionOptions{"main", "cuda", "eager", 0});
  ::setenv("GRAPE_KERNEL_TIMELINE", file.c_str(), 1);
  plain.run(in);
  ::unsetenv("GRAPE_KERNEL_TIMELINE");
  EXPECT_FALSE(std::ifstream(file)) << "a program built without the stamps wrote a timeline";
}

}  // namespace
}  // namespace grape
