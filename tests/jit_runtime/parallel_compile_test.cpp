// compile_parallel's scheduling, with a stand-in for NVRTC: one pool over every target's jobs,
// each distinct (source, target) pair compiled once, the longest source first.
#include "jit/parallel_compile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "jit/build_progress.h"

namespace grape::jit {
namespace {

// Records every compile it is asked for; its "PTX" names the source's tag and the target.
struct FakeNvrtc {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::string>> calls;  // (name, target), in the order started
  CompileFn fn() {
    return [this](const CompileJob& job, const std::string& arch) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        calls.emplace_back(job.name, arch);
      }
      if (job.source.find("broken") != std::string::npos) throw Error(ErrorCode::Internal, "bad " + job.name);
      CompileResult r;
      r.ptx = job.source.substr(0, job.source.find(' ')) + "@" + arch;
      return r;
    };
  }
};

std::string source(const std::string& tag, size_t bytes) { return tag + " " + std::string(bytes, 'x'); }

// Two entries' kernels for two targets, a kernel both entries share, and one job whose target is
// compile_parallel's default.
std::vector<CompileJob> two_entries_two_targets() {
  const std::string shared = source("shared", 500), big = source("big", 900), small = source("small", 10),
                    mid = source("mid", 300);
  std::vector<CompileJob> jobs;
  for (const char* arch : {"sm_80", "sm_90"}) {
    jobs.emplace_back(small, std::string("prefill_k0_") + arch, arch);
    jobs.emplace_back(shared, std::string("prefill_k1_") + arch, arch);
    jobs.emplace_back(mid, std::string("decode_k0_") + arch, arch);
    jobs.emplace_back(shared, std::string("decode_k1_") + arch, arch);  // the same source as prefill_k1
    jobs.emplace_back(big, std::string("decode_k2_") + arch, arch);
  }
  jobs.emplace_back(big, "decode_k2_default");  // "" -> the call's arch, sm_90: the same as decode_k2_sm_90
  return jobs;
}

TEST(CompileParallel, EveryTargetInOnePoolLongestFirstEachDistinctPairOnce) {
  const std::vector<CompileJob> jobs = two_entries_two_targets();
  FakeNvrtc fake;
  std::vector<std::pair<size_t, size_t>> reports;
  set_build_observer([&](size_t done, size_t total) { reports.emplace_back(done, total); });
  const std::vector<CompileOutcome> out = compile_parallel(jobs, "sm_90", nullptr, 1, fake.fn());
  set_build_observer(nullptr);

  // Eight distinct (source, target) pairs, each compiled once; on one thread in the order of
  // their sources' lengths, both targets interleaved (stable: sm_80's first).
  using Calls = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(fake.calls, (Calls{{"decode_k2_sm_80", "sm_80"},
                               {"decode_k2_sm_90", "sm_90"},
                               {"prefill_k1_sm_80", "sm_80"},
                               {"prefill_k1_sm_90", "sm_90"},
                               {"decode_k0_sm_80", "sm_80"},
                               {"decode_k0_sm_90", "sm_90"},
                               {"prefill_k0_sm_80", "sm_80"},
                               {"prefill_k0_sm_90", "sm_90"}}));
  // Every job gets its own pair's result.
  ASSERT_EQ(out.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    const std::string arch = jobs[i].arch.empty() ? "sm_90" : jobs[i].arch;
    EXPECT_EQ(out[i].error, "") << jobs[i].name;
    EXPECT_EQ(out[i].result.ptx, jobs[i].source.substr(0, jobs[i].source.find(' ')) + "@" + arch)
        << jobs[i].name;
  }
  // One build in the progress count: 0..8 of 8, not a count per target.
  ASSERT_EQ(reports.size(), 9u);
  for (size_t i = 0; i < reports.size(); ++i) EXPECT_EQ(reports[i], std::make_pair(i, size_t{8}));
}

TEST(CompileParallel, ManyThreadsCompileEachDistinctPairOnce) {
  const std::vector<CompileJob> jobs = two_entries_two_targets();
  FakeNvrtc fake;
  const std::vector<CompileOutcome> out = compile_parallel(jobs, "sm_90", nullptr, 4, fake.fn());
  EXPECT_EQ(fake.calls.size(), 8u);
  ASSERT_EQ(out.size(), jobs.size());
  EXPECT_EQ(out[1].result.ptx, "shared@sm_80");
  EXPECT_EQ(out[3].result.ptx, "shared@sm_80");
  EXPECT_EQ(out[8].result.ptx, "shared@sm_90");
  EXPECT_EQ(out.back().result.ptx, "big@sm_90");
}

TEST(CompileParallel, AFailureReachesEveryJobOfItsPairOnly) {
  const std::string broken = source("broken", 50), fine = source("fine", 40);
  const std::vector<CompileJob> jobs = {{broken, "a_k0", "sm_90"},
                                        {fine, "a_k1", "sm_90"},
                                        {broken, "b_k0", "sm_90"},
                                        {broken, "a_k0", "sm_80"}};
  FakeNvrtc fake;
  const std::vector<CompileOutcome> out = compile_parallel(jobs, "", nullptr, 2, fake.fn());
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(fake.calls.size(), 3u);
  EXPECT_NE(out[0].error.find("bad a_k0"), std::string::npos);
  EXPECT_TRUE(out[0].failure);
  EXPECT_EQ(out[1].error, "");
  EXPECT_EQ(out[2].error, out[0].error);  // b_k0 shares a_k0's compile and its message
  EXPECT_NE(out[3].error.find("bad a_k0"), std::string::npos);
}

TEST(CompileParallel, TraceHasALinePerDistinctPair) {
  const std::string trace = ::testing::TempDir() + "grape_build_trace.txt";
  std::remove(trace.c_str());
  ASSERT_EQ(setenv("GRAPE_BUILD_TRACE", trace.c_str(), 1), 0);
  FakeNvrtc fake;
  compile_parallel(two_entries_two_targets(), "sm_90", nullptr, 2, fake.fn());
  unsetenv("GRAPE_BUILD_TRACE");
  std::ifstream in(trace);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 8u);
  // "start seconds bytes target name"
  std::istringstream first(lines[0]);
  double start = -1, seconds = -1;
  size_t bytes = 0;
  std::string target, name;
  first >> start >> seconds >> bytes >> target >> name;
  EXPECT_GE(start, 0.0);
  EXPECT_GE(seconds, 0.0);
  EXPECT_GT(bytes, 0u);
  EXPECT_TRUE(target == "sm_80" || target == "sm_90") << lines[0];
  EXPECT_FALSE(name.empty());
  std::remove(trace.c_str());
}

}  // namespace
}  // namespace grape::jit
