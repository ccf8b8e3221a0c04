// Bounded runs on the CUDA eager executor: a run stopped by its deadline leaves the states as they
// were. It stops only before the plan's commit phase (ExecPlan::first_state_write), never between
// two state writes; here state `a` is updated in place by one of the first steps and `b` after
// some 5000 launches (Plan.InPlaceStateUpdateStartsTheCommitPhaseEarly checks that plan on the
// CPU), so a deadline that passes during those launches must not leave `a` written and `b` not.
// Without a CUDA driver the test skips with a message.
#include <gtest/gtest.h>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"
#include "tests/jit_codegen/two_states_program.h"

namespace grape {
namespace {

using namespace gpu_test;

using test_programs::kTwoStates;

// The states as host values; an undefined tensor reads as zeros (the declared initial value).
std::vector<float> values(const Session& s, const std::string& name) {
  Tensor t = s.state(name);
  std::vector<float> out(8, 0.0f);
  if (t.defined())
    for (int64_t i = 0; i < t.numel(); ++i) out[static_cast<size_t>(i)] = static_cast<float>(t.get(i));
  return out;
}

TEST(EagerExecutor, StoppedRunLeavesStatesAsTheyWere) {
  REQUIRE_GPU();
  auto m = Model::load_source(kTwoStates, "two_states.grp");
  SessionOptions o{"main", "cuda", "eager", 0};
  o.timeout_seconds = 0.002;  // far less than launching the loop's kernels takes
  Session gpu(m, o);
  int stopped = 0, completed = 0;
  for (int k = 0; k < 8; ++k) {
    SCOPED_TRACE("run " + std::to_string(k));
    Tensor x = sample(DType::F32, {64}, static_cast<uint32_t>(k + 1));
    x.set(0, k + 1.0);
    std::vector<float> a0 = values(gpu, "a"), b0 = values(gpu, "b");
    bool done = false;
    try {
      gpu.run({{"x", x}, {"p", Tensor::scalar_i32(k)}});
      done = true;
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::Interrupted) << e.what();
    }
    std::vector<float> a = values(gpu, "a"), b = values(gpu, "b");
    if (done) {
      ++completed;
      a0[static_cast<size_t>(k)] = b0[static_cast<size_t>(k)] = k + 1.0f;
    } else {
      ++stopped;
    }
    EXPECT_EQ(a, a0) << (done ? "a completed run" : "a stopped run") << " changed `a` wrongly";
    EXPECT_EQ(b, b0) << (done ? "a completed run" : "a stopped run") << " changed `b` wrongly";
  }
  EXPECT_EQ(stopped + completed, 8);
}

}  // namespace
}  // namespace grape
