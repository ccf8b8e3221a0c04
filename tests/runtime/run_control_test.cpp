// Bounded runs on the CPU backend: the session's trip cap for loops without `max`, the per-run
// timeout, and Session::interrupt from another thread. After each the session runs again and its
// state is as before the stopped run.
#include "runtime/run_control.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "runtime/model.h"

namespace grape {
namespace {

// `count` counts the calls that finished; `n` sets how long the loop (without `max`) runs.
const char* kProgram = R"(
state count: i32[] = zeros

fn main(n: i32[]) -> i32[] {
  count = count + 1
  var i = 0
  while i < n {
    i = i + 1
  }
  return i
}
)";

std::shared_ptr<Model> model() { return Model::load_source(kProgram, "bounded.grp"); }

SessionOptions options(int64_t max_loop_trips = 0, double timeout_seconds = 0) {
  SessionOptions o;
  o.backend = "cpu";
  o.max_loop_trips = max_loop_trips;
  o.timeout_seconds = timeout_seconds;
  return o;
}

constexpr int32_t kForever = 2'000'000'000;
constexpr int64_t kHugeCap = int64_t{1} << 40;

int64_t run(Session& s, int32_t n) { return s.run({{"n", Tensor::scalar_i32(n)}})[0].get_int(0); }
int64_t count(const Session& s) { return s.state("count").get_int(0); }

TEST(RunControl, DefaultCapIsDocumentedValue) { EXPECT_EQ(resolve_max_loop_trips(0), kDefaultMaxLoopTrips); }

TEST(RunControl, LoopWithoutMaxStopsAtTheSessionCap) {
  Session s(model(), options(1000));
  EXPECT_EQ(run(s, 1000), 1000);  // exactly the cap: finishes
  EXPECT_EQ(count(s), 1);
  try {
    run(s, 1001);
    FAIL() << "no error for a loop past the cap";
  } catch (const SourceError& e) {
    // The position in front, as a compile error has it; the C API reports it too.
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("bounded.grp:7:3: error: the loop has no `max` bound and ran 1000 trips", 0), 0u)
        << msg;
    EXPECT_EQ(e.file(), "bounded.grp");
    EXPECT_EQ(e.line(), 7);
    EXPECT_EQ(e.column(), 3);
    EXPECT_NE(msg.find("--max-loop-trips"), std::string::npos) << msg;
  }
  EXPECT_EQ(count(s), 1) << "a capped run must not commit state";
  EXPECT_EQ(run(s, 3), 3);
  EXPECT_EQ(count(s), 2);
}

TEST(RunControl, DefaultCapEndsARunawayLoopInSeconds) {
  Session s(model(), options());
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(run(s, kForever), Error);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 30.0);  // a Debug build under sanitizers included
}

TEST(RunControl, NegativeCapOrTimeoutIsRefused) {
  EXPECT_THROW(Session(model(), options(-1)), Error);
  EXPECT_THROW(Session(model(), options(0, -1)), Error);
}

TEST(RunControl, TimeoutStopsALongLoopNearTheDeadline) {
  Session s(model(), options(kHugeCap, 0.3));
  auto t0 = std::chrono::steady_clock::now();
  try {
    run(s, kForever);
    FAIL() << "no timeout";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
    EXPECT_NE(std::string(e.what()).find("timeout of 0.3 s"), std::string::npos) << e.what();
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(seconds, 0.3);
  EXPECT_LT(seconds, 1.3);
  EXPECT_FALSE(s.state("count").defined());
  EXPECT_EQ(run(s, 4), 4);  // the deadline is per run
  EXPECT_EQ(count(s), 1);
}

TEST(RunControl, InterruptFromAnotherThreadLeavesTheSessionUsable) {
  Session s(model(), options(kHugeCap));
  s.set_state("count", Tensor::scalar_i32(41));
  std::thread stopper([&s] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    s.interrupt();
  });
  auto t0 = std::chrono::steady_clock::now();
  try {
    run(s, kForever);
    ADD_FAILURE() << "the run was not interrupted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Interrupted);
    EXPECT_NE(std::string(e.what()).find("interrupted"), std::string::npos) << e.what();
  }
  stopper.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 5.0);
  EXPECT_EQ(count(s), 41) << "the interrupted run must leave the state as before it";

  s.interrupt();  // no run in progress: no effect on the next one
  EXPECT_EQ(run(s, 5), 5);
  EXPECT_EQ(count(s), 42);
}

}  // namespace
}  // namespace grape
