// A program shared by BlockSequences.StaticLoopWithBreakIsInsideASequence (CPU: its loop is inside
// a sequence) and BlockSequences.StaticLoopWithBreakRunsInsideOneLaunch (GPU: the results): a loop
// with a static bound, a `break` and an update at a dynamic index.
#pragma once

namespace grape::test_programs {

inline constexpr const char* kStaticLoop = R"(
fn main(x: f32[6], n: i32[]) -> (f32[6], i32[]) {
  var v = x
  var k = 0
  for i in 0..9 {
    if k >= n { break }
    v = v * 0.5 + cast(i, f32)
    v[k % 6] = v[k % 6] - 1.0
    k = k + 1
  }
  return (v, k)
}
)";

}  // namespace grape::test_programs
