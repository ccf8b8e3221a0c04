#include "jit/build_progress.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "jit/parallel_compile.h"

namespace grape::jit {
namespace {

using Reports = std::vector<std::pair<size_t, size_t>>;

// Records every report while alive; removes the observer when destroyed.
struct Recorder {
  Reports seen;
  Recorder() {
    set_build_observer([this](size_t done, size_t total) { seen.emplace_back(done, total); });
  }
  ~Recorder() { set_build_observer(nullptr); }
};

TEST(BuildProgress, OneBuildCountsUpToItsTotal) {
  Recorder r;
  {
    BuildTicket t(3);
    t.finished_one();
    t.finished_one();
    t.finished_one();
    t.finished_one();  // more than announced: ignored
  }
  EXPECT_EQ(r.seen, (Reports{{0, 3}, {1, 3}, {2, 3}, {3, 3}}));
}

TEST(BuildProgress, OverlappingBuildsAddUpAndRestartAfterTheLast) {
  Recorder r;
  {
    BuildTicket a(2);
    a.finished_one();
    {
      BuildTicket b(3);
      b.finished_one();
      a.finished_one();
    }  // b ends with two kernels unreported: they count as done, shown with the next report
    BuildTicket c(1);
    c.finished_one();
  }
  EXPECT_EQ(r.seen, (Reports{{0, 2}, {1, 2}, {1, 5}, {2, 5}, {3, 5}, {5, 6}, {6, 6}}));
  // After the last build the count starts again from zero.
  r.seen.clear();
  { BuildTicket d(1); }
  EXPECT_EQ(r.seen, (Reports{{0, 1}, {1, 1}}));
}

TEST(BuildProgress, NoObserverNoReports) {
  Reports seen;
  set_build_observer([&](size_t done, size_t total) { seen.emplace_back(done, total); });
  set_build_observer(nullptr);
  {
    BuildTicket t(2);
    t.finished_one();
  }
  EXPECT_TRUE(seen.empty());
}

TEST(BuildProgress, CompileParallelReportsEachDistinctSource) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;
  const std::string a = "extern \"C\" __global__ void k(float* p) { p[0] = 1.0f; }\n";
  const std::string b = "extern \"C\" __global__ void k(float* p) { p[0] = 2.0f; }\n";
  Recorder r;
  std::vector<CompileOutcome> out =
      compile_parallel({{a, "a"}, {b, "b"}, {a, "a again"}}, "compute_80", nullptr, 2);
  ASSERT_EQ(out.size(), 3u);
  for (const CompileOutcome& o : out) EXPECT_EQ(o.error, "");
  // Two distinct sources: reported 0, 1, 2 of 2 (finishing in either order).
  EXPECT_EQ(r.seen, (Reports{{0, 2}, {1, 2}, {2, 2}}));
}

}  // namespace
}  // namespace grape::jit
