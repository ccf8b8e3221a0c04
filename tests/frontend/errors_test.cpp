// A few compile errors: nullopt, a diagnostic with the expected fragment at the right line:col.
// (The full catalogue of diagnostics lives in the golden tests.)
#include <gtest/gtest.h>

#include "tests/frontend/frontend_test_util.h"

namespace grape::testing {
namespace {

// Compiles `src` and checks that it fails with a diagnostic at `pos` ("line:col") containing
// `fragment`.
void expect_error(const std::string& src, const std::string& pos, const std::string& fragment) {
  auto c = compile(src);
  EXPECT_FALSE(c->ok());
  bool found = false;
  for (const auto& d : c->diags.all()) {
    std::string at = std::to_string(d.span.begin.line) + ":" + std::to_string(d.span.begin.column);
    found |= d.severity == Severity::Error && at == pos && d.message.find(fragment) != std::string::npos;
    EXPECT_EQ(d.span.file, 0) << d.message;
  }
  EXPECT_TRUE(found) << "expected at " << pos << ": " << fragment << "\ngot:\n" << c->errors();
}

TEST(Errors, UnknownNameSuggests) {
  expect_error("fn main(x: f32[4]) -> f32[4] {\n  return xx + 1.0\n}\n", "2:10",
               "unknown name 'xx'; did you mean 'x'?");
}

TEST(Errors, DtypeMismatch) {
  expect_error("fn main(a: f16[B, 4], b: f32[B, 4]) -> f16[B, 4] {\n  let y = a + b\n  return y\n}\n", "2:11",
               "dtype mismatch in `+`: f16[B, 4] and f32[B, 4]");
}

TEST(Errors, ShapeMismatchNamesShapesAsWritten) {
  expect_error("fn main(a: f16[B, 768], w: f16[B, 3072]) -> f16[B, 768] {\n  return a + w\n}\n", "2:10",
               "f16[B, 768] and f16[B, 3072]");
}

TEST(Errors, NonScalarIfConditionSuggestsReductions) {
  expect_error("fn main(x: f32[4], m: bool[4]) -> f32[4] {\n  var y = x\n  if m { y = -x }\n  return y\n}\n", "3:6",
               "all(...) or any(...)");
}

TEST(Errors, BreakOutsideALoop) {
  expect_error("fn main(x: f32[4]) -> f32[4] {\n  break\n  return x\n}\n", "2:3", "break outside of a loop");
}

TEST(Errors, ReturnTypeMismatch) {
  expect_error("fn main(x: f32[B, 4]) -> f32[B, 5] {\n  return x\n}\n", "2:10",
               "returns f32[B, 4], but its signature declares f32[B, 5]");
}

TEST(Errors, AssignToLet) {
  expect_error("fn main(x: f32[4]) -> f32[4] {\n  let y = x\n  y = x + 1.0\n  return y\n}\n", "3:3",
               "cannot assign to 'y'");
}

TEST(Errors, WeightIndexMustBeCompileTime) {
  expect_error(
      "weights { h[2] { w: f32[4] } }\nfn main(x: f32[4], n: i32[]) -> f32[4] {\n  var y = x\n"
      "  for i in 0..n { y = y * h[i].w }\n  return y\n}\n",
      "4:29", "compile-time");
}

TEST(Errors, SeveralErrorsInOneRun) {
  auto c = compile("fn main(x: f32[4]) -> f32[4] {\n  let a = foo\n  let b = bar\n  return x\n}\n");
  EXPECT_FALSE(c->ok());
  EXPECT_EQ(c->diags.num_errors(), 2) << c->errors();
}

}  // namespace
}  // namespace grape::testing
