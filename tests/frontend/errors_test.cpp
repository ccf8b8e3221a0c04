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
  expect_error("fn main(x: f32[4], m: bool[4]) -> f32[4] {\n  var y = x\n  if m { y = -x }\n  return y\n}\n",
               "3:6", "all(...) or any(...)");
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

// Every diagnostic quoting a name cuts a long one (quote_name): a 100k-character name costs a line
// in each message, not 100 KB. `@` in each program stands for the name.
TEST(Errors, LongNamesAreCutInEveryMessage) {
  const std::string name(100000, 'n');
  const char* programs[] = {
      "fn main(x: f32[2]) -> f32[2] {\n  return @\n}\n",                            // unknown name
      "fn main(x: f32[2]) -> f32[2] {\n  return @(x)\n}\n",                         // unknown function
      "fn main(x: f32[2]) -> f32[2] {\n  return sum(x, @=0)\n}\n",                  // unknown keyword
      "fn main(x: f32[2]) -> f32[2] {\n  return sum(x, @=0, @=0)\n}\n",             // keyword twice
      "fn main(@: f32[2], @: f32[2]) -> f32[2] {\n  return @\n}\n",                 // parameter twice
      "fn main(x: f32[2]) -> f32[2] {\n  let @ = x\n  @ = x\n  return x\n}\n",      // assign to a let
      "fn main(x: @[2]) -> f32[2] {\n  return x\n}\n",                              // element type
      "fn main(x: f32[2]) -> f32[@] {\n  return x\n}\n",                            // dimension
      "const @ = @ + 1\nfn main(x: f32[2]) -> f32[2] {\n  return x\n}\n",           // const cycle
      "const @ = 1\nconst @ = 2\nfn main(x: f32[2]) -> f32[2] {\n  return x\n}\n",  // declared twice
      "weights {\n  fc.w: f32[2]\n}\nfn main(x: f32[2]) -> f32[2] {\n  return x + fc.@\n}\n",
      "weights {\n  @: f32[2]\n  @: f32[2]\n}\nfn main(x: f32[2]) -> f32[2] {\n  return x\n}\n",
      "fn @(x: f32[2]) -> f32[2] {\n  return @(x)\n}\nfn main(x: f32[2]) -> f32[2] {\n  return @(x)\n}\n",
      "fn @(x: f32[2]) -> f32[2] {\n  return x\n}\nfn main(x: f32[2]) -> f32[2] {\n  return @(x, x)\n}\n",
      "fn @(x: f32[2]) -> f32[2] {\n  let y = x\n}\nfn main(x: f32[2]) -> f32[2] {\n  return @(x)\n}\n",
      "fn main(x: f32[2]) -> f32[2] {\n  while true @ 3 {\n  }\n  return x\n}\n",  // syntax error
      "state s: f32[2] = @\nfn main(x: f32[2]) -> f32[2] {\n  return x\n}\n",      // initialiser
  };
  for (const char* p : programs) {
    std::string src;
    for (const char* c = p; *c; ++c) src += *c == '@' ? name : std::string(1, *c);
    auto c = compile(src);
    ASSERT_FALSE(c->ok()) << p;
    std::string out = c->diags.render(c->sm);
    EXPECT_NE(out.find("...' (100"), std::string::npos) << p << "\n" << out.substr(0, 2000);
    size_t located = 0;  // each diagnostic and note: a message line, a cut source line, a caret
    for (const auto& d : c->diags.all()) located += 1 + d.notes.size();
    EXPECT_LT(out.size(), 600u * located) << p << "\n" << out.substr(0, 2000);
  }
}

}  // namespace
}  // namespace grape::testing
