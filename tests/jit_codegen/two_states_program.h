// A program shared by Plan.InPlaceStateUpdateStartsTheCommitPhaseEarly (CPU: the plan's premise)
// and EagerExecutor.StoppedRunLeavesStatesAsTheyWere (GPU): state `a` is updated in place by one
// of the first steps and `b` only after some 5000 launches.
#pragma once

namespace grape::test_programs {

inline constexpr const char* kTwoStates = R"(
state a: f32[8] = zeros
state b: f32[8] = zeros
fn main(x: f32[64], p: i32[]) -> f32[64] {
  a[p] = x[0]
  var y = x
  for i in 0..2000 {
    y = cumsum(y) * 0.5 + sum(x[0:i % 60 + 1])
  }
  b[p] = x[0]
  return y
}
)";

}  // namespace grape::test_programs
