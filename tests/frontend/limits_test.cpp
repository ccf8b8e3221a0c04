// Resource limits of the compiler (CompileLimits): each is reported with a position and the name
// of the limit, and raising the limit lets the same program through. Errors of declarations used
// in bodies are reported as themselves, never as malformed IR.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/frontend/frontend_test_util.h"

namespace grape::testing {
namespace {

std::unique_ptr<Compiled> compile_with(const std::string& text, const CompileLimits& limits) {
  auto c = std::make_unique<Compiled>();
  int id = c->sm.add("test.grp", text);
  CompileOptions opts;
  opts.limits = limits;
  c->module = compile_source(c->sm, id, opts, c->diags);
  return c;
}

void expect_error(const Compiled& c, const std::string& fragment) {
  EXPECT_FALSE(c.ok());
  EXPECT_NE(c.errors().find(fragment), std::string::npos) << c.errors();
}

TEST(Limits, OpsAfterInlining) {
  std::string text = "fn f8(x: f32[2]) -> f32[2] { return x + 1.0 }\n";
  for (int i = 7; i >= 0; --i)
    text += "fn f" + std::to_string(i) + "(x: f32[2]) -> f32[2] { return f" + std::to_string(i + 1) +
            "(x) + f" + std::to_string(i + 1) + "(x) }\n";
  CompileLimits small;
  small.max_ops = 1000;
  expect_error(*compile_with(text, small), "more than 1000 operations (the max_ops limit)");
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
}

TEST(Limits, ChainOfDoubleCallsFailsFast) {
  std::string text = "fn f60(x: f32[2]) -> f32[2] { return x + 1.0 }\n";
  for (int i = 59; i >= 0; --i)
    text += "fn f" + std::to_string(i) + "(x: f32[2]) -> f32[2] { return f" + std::to_string(i + 1) +
            "(x) + f" + std::to_string(i + 1) + "(x) }\n";
  CompileLimits small;
  small.max_ops = 20000;
  auto t0 = std::chrono::steady_clock::now();
  auto c = compile_with(text, small);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20));
  expect_error(*c, "the max_ops limit");
  // One report for the whole program, not one per entry.
  EXPECT_EQ(c->diags.num_errors(), 1) << c->errors();
}

TEST(Limits, UnrolledIterationsOfTheWholeProgram) {
  const std::string text = R"(
fn main(x: f32[4]) -> f32[4] {
  var y = x
  for i in 0..40 {
    for j in 0..40 {
      y = y + sum(zeros(i + j + 1))
    }
  }
  return y
}
)";
  CompileLimits small;
  small.max_unrolled_iterations = 1000;
  auto c = compile_with(text, small);
  expect_error(*c, "past 1000 unrolled iterations in all (the max_unrolled_iterations limit");
  EXPECT_NE(c->errors().find("5:5:"), std::string::npos) << c->errors();  // the inner loop
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
}

TEST(Limits, WeightsCountingGroupInstances) {
  const std::string text =
      "weights { h[30] { g[30] { w: f32[1] } } }\nfn main(x: f32[1]) -> f32[1] { return x }\n";
  CompileLimits small;
  small.max_weights = 500;
  auto c = compile_with(text, small);
  expect_error(*c,
               "1:11: the weights declare more than 500 tensors and group instances (the max_weights limit)");
  EXPECT_EQ(c->diags.num_errors(), 1);
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
}

TEST(Limits, ElementsPerTensor) {
  CompileLimits small;
  small.max_tensor_elements = 100;
  expect_error(
      *compile_with("weights { w: f32[10, 11] }\nfn main(x: f32[1]) -> f32[1] { return x }\n", small),
      "1:11: weight 'w' has 110 elements (shape [10, 11]); a tensor may have at most 100");
  expect_error(*compile_with("state s: f32[101] = zeros\nfn main(x: f32[1]) -> f32[1] { return x }\n", small),
               "state 's' has 101 elements");
  expect_error(*compile_with("fn main(x: f32[1]) -> f32[1] { return x + sum(zeros(101)) }\n", small),
               "this makes a tensor of type f32[101], with 101 elements");
  EXPECT_TRUE(compile_with("fn main(x: f32[1]) -> f32[1] { return x + sum(zeros(100)) }\n", small)->ok());
}

TEST(Limits, ElementsPerProgram) {
  CompileLimits small;
  small.max_program_elements = 1000;
  // Declarations: every instance of a group counts; the one that crosses is reported, once.
  auto c = compile_with(
      "weights { h[3] { w: f32[400] } }\nstate s: f32[500] = zeros\nfn main(x: f32[1]) -> f32[1] { return x "
      "}\n",
      small);
  expect_error(
      *c, "weight 'h.2.w' takes the weights and states to 1200 elements; a program may have at most 1000");
  EXPECT_EQ(c->diags.num_errors(), 1) << c->errors();
  // Results of static shape, counted after unrolling, on top of the declarations.
  const std::string text = R"(
weights { w: f32[950] }
fn main(x: f32[1]) -> f32[1] {
  var y = x
  for i in 0..10 {
    y = y + sum(zeros(i + 1))
  }
  return y
}
)";
  c = compile_with(text, small);
  expect_error(*c, "taking the program to 1");
  expect_error(*c, "a program may have at most 1000 (the max_program_elements limit)");
  EXPECT_NE(c->errors().find("6:17:"), std::string::npos) << c->errors();
  EXPECT_EQ(c->diags.num_errors(), 1) << c->errors();
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
}

TEST(Limits, SetByName) {
  CompileLimits l;
  EXPECT_TRUE(set_limit(l, "max_program_elements", 7));
  EXPECT_EQ(l.max_program_elements, 7);
  EXPECT_TRUE(set_limit(l, "max_call_depth", int64_t{1} << 40));
  EXPECT_EQ(l.max_call_depth, 1 << 20);
  EXPECT_FALSE(set_limit(l, "max_opz", 1));
  EXPECT_NE(std::string(limit_names()).find("max_program_elements"), std::string::npos);
}

TEST(Limits, DeviceLoopTrips) {
  const std::string text = R"(
fn main(x: f32[4]) -> f32[4] {
  var y = x
  while sum(y) < 100.0 max 5000 {
    y = y + 1.0
  }
  return y
}
)";
  CompileLimits small;
  small.max_loop_trips = 4999;
  expect_error(*compile_with(text, small),
               "4:28: the `max` trip bound 5000 is above the limit of 4999 trips");
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
  expect_error(
      *compile_with("fn main(x: f32[4]) -> f32[4] {\n  var y = x\n  while true max 9223372036854775807 {\n"
                    "    y = y + 1.0\n  }\n  return y\n}\n",
                    CompileLimits{}),
      "the `max` trip bound 9223372036854775807 is above the limit of 100000000");
}

TEST(Limits, CallDepth) {
  std::string text = "fn f6(x: f32[2]) -> f32[2] { return x }\n";
  for (int i = 5; i >= 0; --i)
    text +=
        "fn f" + std::to_string(i) + "(x: f32[2]) -> f32[2] { return f" + std::to_string(i + 1) + "(x) }\n";
  CompileLimits small;
  small.max_call_depth = 3;
  expect_error(*compile_with(text, small), "calls nested more than 3 deep (the max_call_depth limit)");
  EXPECT_TRUE(compile_with(text, CompileLimits{})->ok());
}

// A const whose value is an error, used in a body: its own error, with its position.
TEST(DeclarationErrors, ConstErrorUsedInBody) {
  for (std::string value : {"C", "1 / 0", "9223372036854775807 + 1"}) {
    auto c = compile("const B = " + value + "\nfn main(x: f32[3]) -> f32[3] {\n  return x * B\n}\n");
    EXPECT_FALSE(c->ok());
    EXPECT_EQ(c->diags.num_errors(), 1) << c->errors();
    EXPECT_EQ(c->errors().rfind("1:11: ", 0), 0u) << c->errors();
  }
  auto c = compile("const B = C\nfn main(x: f32[B]) -> f32[B] {\n  return x\n}\n");
  EXPECT_FALSE(c->ok());
  EXPECT_EQ(c->errors().rfind("1:11: ", 0), 0u) << c->errors();
}

TEST(DeclarationErrors, DuplicateParameter) {
  auto c = compile("fn main(x: f32[3], x: i32[2]) -> f32[3] {\n  return x\n}\n");
  EXPECT_FALSE(c->ok());
  EXPECT_EQ(c->errors(), "1:20: parameter 'x' of 'main' is declared twice\n");
}

TEST(DeclarationErrors, StateFillOutOfRange) {
  auto c = compile(
      "state s: i32[2] = full(99999999999)\nfn main(x: i32[2]) -> i32[2] {\n  s = s + x\n  return s\n}\n");
  EXPECT_FALSE(c->ok());
  EXPECT_NE(
      c->errors().find("1:24: state 's' (i32) cannot be filled with 99999999999: out of the range of i32"),
      std::string::npos)
      << c->errors();
  EXPECT_TRUE(
      compile("state s: i32[2] = full(-2147483648)\nfn main(x: i32[2]) -> i32[2] {\n  return x\n}\n")->ok());
}

}  // namespace
}  // namespace grape::testing
