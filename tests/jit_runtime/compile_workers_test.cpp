#include "jit/compile_workers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "jit/parallel_compile.h"
#include "jit_test_util.h"

namespace grape::jit {
namespace {

using testing::ScopedEnv;

// tests/jit_runtime/worker/compile_worker_main.cpp
const std::string kWorker = GRAPE_TEST_COMPILE_WORKER;

std::string kernel(int n) {
  return "extern \"C\" __global__ void k" + std::to_string(n) +
         "(float* x) { x[threadIdx.x] *= " + std::to_string(n) + ".0f; }\n";
}

TEST(WorkerLayout, FourChannelsAProcessFromEightThreadsElseOne) {
  auto is = [](unsigned threads, unsigned processes, unsigned channels) {
    const WorkerLayout l = worker_layout(threads);
    EXPECT_EQ(l.processes, processes) << threads;
    EXPECT_EQ(l.channels, channels) << threads;
  };
  is(0, 1, 1);
  is(1, 1, 1);
  is(2, 2, 1);
  is(7, 7, 1);
  is(8, 2, 4);
  is(16, 4, 4);
  is(18, 5, 4);
}

TEST(CompileWorkers, CompileWhatThisProcessCompiles) {
  SKIP_WITHOUT_NVRTC();
  CompileWorkers w(kWorker, WorkerLayout{2, 2});
  ASSERT_EQ(w.slots(), 4u);
  for (unsigned slot = 0; slot < 4; ++slot) {
    const std::string src = kernel(static_cast<int>(slot));
    std::optional<CompileResult> there = w.compile(slot, src, "k", "sm_80", {"-DUNUSED=1"});
    ASSERT_TRUE(there) << slot;
    const CompileResult here = compile_cuda(src, "k", "sm_80", {"-DUNUSED=1"});
    EXPECT_EQ(there->cubin, here.cubin);
    EXPECT_EQ(there->ptx, here.ptx);
    EXPECT_EQ(there->log, here.log);
    EXPECT_EQ(there->nvrtc_version, here.nvrtc_version);
    EXPECT_GT(w.pid_of(slot), 0);
  }
  EXPECT_EQ(w.pid_of(0), w.pid_of(1));
  EXPECT_NE(w.pid_of(1), w.pid_of(2));
}

TEST(CompileWorkers, ThrowTheErrorTheWorkerCaught) {
  SKIP_WITHOUT_NVRTC();
  CompileWorkers w(kWorker, WorkerLayout{1, 1});
  const std::string bad = "extern \"C\" __global__ void k() { undeclared(); }\n";
  std::string here;
  ErrorCode here_code{};
  try {
    compile_cuda(bad, "broken", "sm_80", {});
  } catch (const Error& e) {
    here = e.what();
    here_code = e.code();
  }
  ASSERT_FALSE(here.empty());
  try {
    w.compile(0, bad, "broken", "sm_80", {});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), here_code);
    EXPECT_EQ(std::string(e.what()), here);
  }
  // The worker serves the next request.
  EXPECT_TRUE(w.compile(0, kernel(1), "k", "sm_80", {}));
}

TEST(CompileWorkers, ADeadWorkerIsNotUsedAgain) {
  SKIP_WITHOUT_NVRTC();
  CompileWorkers w(kWorker, WorkerLayout{2, 1});
  ASSERT_TRUE(w.compile(0, kernel(1), "k", "sm_80", {}));
  ASSERT_GT(w.pid_of(0), 0);
  ASSERT_EQ(::kill(w.pid_of(0), SIGKILL), 0);
  EXPECT_FALSE(w.compile(0, kernel(2), "k", "sm_80", {}));
  EXPECT_FALSE(w.compile(0, kernel(3), "k", "sm_80", {}));
  EXPECT_TRUE(w.compile(1, kernel(2), "k", "sm_80", {}));  // the other process is unaffected
}

TEST(CompileWorkers, AnExecutableThatCannotStartMeansNoWorker) {
  CompileWorkers w("/nonexistent/grape-worker", WorkerLayout{1, 2});
  EXPECT_FALSE(w.compile(0, kernel(1), "k", "sm_80", {}));
  EXPECT_FALSE(w.compile(1, kernel(1), "k", "sm_80", {}));
  EXPECT_FALSE(w.compile(2, kernel(1), "k", "sm_80", {}));  // past the slots
  EXPECT_EQ(w.pid_of(0), -1);
}

TEST(CompileWorkers, TheWorkerBodyRejectsBadArguments) {
  char arg0[] = "w", arg1[] = "--grape-compile-worker", zero[] = "0", many[] = "17", word[] = "x";
  char* none[] = {arg0, arg1, nullptr};
  EXPECT_EQ(compile_worker_main(2, none), 2);
  for (char* c : {zero, many, word}) {
    char* argv[] = {arg0, arg1, c, nullptr};
    EXPECT_EQ(compile_worker_main(3, argv), 2) << c;
  }
}

TEST(CompileWorkers, TheExecutableIsTheOneSetElseTheEnvironments) {
  ScopedEnv env("GRAPE_COMPILE_WORKER", std::string("/from/env"));
  ScopedEnv on("GRAPE_COMPILE_PROCESSES", std::nullopt);
  set_compile_worker_executable("");
  EXPECT_EQ(compile_worker_executable(), "/from/env");
  EXPECT_TRUE(compile_workers_wanted());
  set_compile_worker_executable("/set");
  EXPECT_EQ(compile_worker_executable(), "/set");
  {
    ScopedEnv off("GRAPE_COMPILE_PROCESSES", std::string("0"));
    EXPECT_FALSE(compile_workers_wanted());
  }
  set_compile_worker_executable("");
  ScopedEnv unset("GRAPE_COMPILE_WORKER", std::nullopt);
  EXPECT_EQ(compile_worker_executable(), "");
  EXPECT_FALSE(compile_workers_wanted());
}

// compile_parallel through workers: the same results as on threads, errors in job order.
TEST(CompileWorkers, ParallelBuildsGiveTheSameResultsInProcesses) {
  SKIP_WITHOUT_NVRTC();
  ScopedEnv on("GRAPE_COMPILE_PROCESSES", std::nullopt);
  std::vector<CompileJob> jobs;
  for (int i = 0; i < 8; ++i) jobs.push_back({kernel(i), "k" + std::to_string(i)});
  jobs.push_back({"this is not CUDA\n", "broken"});
  jobs.push_back({kernel(0), "k0 again"});
  set_compile_worker_executable("");
  ScopedEnv none("GRAPE_COMPILE_WORKER", std::nullopt);
  const unsigned before = compile_worker_processes_started();
  const std::vector<CompileOutcome> threads = compile_parallel(jobs, "sm_80", nullptr, 2);
  EXPECT_EQ(compile_worker_processes_started(), before);
  set_compile_worker_executable(kWorker);
  const std::vector<CompileOutcome> processes = compile_parallel(jobs, "sm_80", nullptr, 2);
  // Fewer distinct kernels than kMinJobsPerWorker per process: threads.
  const std::vector<CompileJob> few(jobs.begin(), jobs.begin() + 2 * kMinJobsPerWorker - 1);
  const unsigned after = compile_worker_processes_started();
  const std::vector<CompileOutcome> few_out = compile_parallel(few, "sm_80", nullptr, 2);
  EXPECT_EQ(compile_worker_processes_started(), after);
  set_compile_worker_executable("");
  EXPECT_EQ(after, before + 2);  // two threads: two processes of one channel
  ASSERT_EQ(threads.size(), jobs.size());
  ASSERT_EQ(processes.size(), jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_EQ(processes[i].result.ptx, threads[i].result.ptx) << i;
    EXPECT_EQ(processes[i].result.cubin, threads[i].result.cubin) << i;
    EXPECT_EQ(processes[i].error, threads[i].error) << i;
  }
  EXPECT_FALSE(processes[8].error.empty());
  EXPECT_EQ(few_out[1].result.ptx, threads[1].result.ptx);
  EXPECT_TRUE(processes[0].error.empty());
  EXPECT_FALSE(processes[0].result.cubin.empty());
}

}  // namespace
}  // namespace grape::jit
