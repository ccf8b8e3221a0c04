// Programs compiled and run through runtime/model.h (Model::load_source + Session::run). Every
// expected value is worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

namespace grape {
namespace {

Tensor f32s(std::vector<double> v) {
  Tensor t(DType::F32, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.set(static_cast<int64_t>(i), v[i]);
  return t;
}

std::vector<double> values(const Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.get(i));
  return out;
}

int64_t scalar_int(const Tensor& t) {
  EXPECT_EQ(t.numel(), 1);
  return t.get_int(0);
}

std::shared_ptr<Model> load(const std::string& src, ModelOptions opts = {}) {
  return Model::load_source(src, "test.grp", opts);
}

TEST(EndToEnd, WhileWithBreakSums) {
  // s = 0 + 1 + ... until i == 5 or i == n.
  auto m = load(R"(
fn main(n: i32[]) -> i32[] {
  var s = 0
  var i = 0
  while i < n max 100 {
    if i == 5 { break }
    s = s + i
    i = i + 1
  }
  return s
}
)");
  for (bool optimize : {true, false}) {
    ModelOptions o;
    o.optimize = optimize;
    auto mm = optimize ? m : load(R"(
fn main(n: i32[]) -> i32[] {
  var s = 0
  var i = 0
  while i < n max 100 {
    if i == 5 { break }
    s = s + i
    i = i + 1
  }
  return s
}
)", o);
    Session s(mm, "main");
    EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(10)}})[0]), 10);  // 0+1+2+3+4
    EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(3)}})[0]), 3);    // 0+1+2
    EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(0)}})[0]), 0);    // never runs
  }
}

TEST(EndToEnd, ForWithContinueAndBreak) {
  // Odd i only, and stop once s exceeds 10 (checked first in the body):
  // i=1 s=1, i=3 s=4, i=5 s=9, i=7 s=16, then at i=8 s > 10 -> break. Result 16.
  auto m = load(R"(
fn main(n: i32[]) -> i32[] {
  var s = 0
  for i in 0..n {
    if s > 10 { break }
    if i % 2 == 0 { continue }
    s = s + i
  }
  return s
}
)");
  Session s(m, "main");
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(20)}})[0]), 16);
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(6)}})[0]), 9);  // 1+3+5
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(1)}})[0]), 0);
}

TEST(EndToEnd, NestedLoopsWithBreakInInner) {
  // For each i in 0..3, inner j counts up to i (break when j == i), adding 1 per trip:
  // i=0: 0, i=1: 1, i=2: 2 -> total 3. The outer loop is not affected by the inner break.
  auto m = load(R"(
fn main(x: i32[]) -> i32[] {
  var total = x
  for i in 0..3 {
    var j = 0
    while true max 10 {
      if j == i { break }
      total = total + 1
      j = j + 1
    }
  }
  return total
}
)");
  Session s(m, "main");
  EXPECT_EQ(scalar_int(s.run({{"x", Tensor::scalar_i32(100)}})[0]), 103);
}

TEST(EndToEnd, WhileWithContinue) {
  // Skips multiples of 3: n = 7 -> 1 + 2 + 4 + 5 + 7 = 19.
  auto m = load(R"(
fn main(n: i32[]) -> i32[] {
  var i = 0
  var s = 0
  while i < n max 50 {
    i = i + 1
    if i % 3 == 0 { continue }
    s = s + i
  }
  return s
}
)");
  Session s(m, "main");
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(7)}})[0]), 19);
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(3)}})[0]), 3);
}

TEST(EndToEnd, VarInALoopBodyStartsAfreshEachIteration) {
  // acc is 0 + i in iteration i, so total = 0 + 1 + 2 + 3 = 6 for n = 4 (10 if acc carried over).
  auto m = load(R"(
fn main(n: i32[]) -> i32[] {
  var total = 0
  for i in 0..n {
    var acc = 0
    acc = acc + i
    total = total + acc
  }
  return total
}
)");
  Session s(m, "main");
  EXPECT_EQ(scalar_int(s.run({{"n", Tensor::scalar_i32(4)}})[0]), 6);
}

TEST(EndToEnd, UnrolledLoopOverWeightsWithBreak) {
  // y starts at [0, 0]; before each layer, stop if sum(y) > 20:
  // i=0: sum 0 -> y = [1, 2]; i=1: sum 3 -> y = [11, 22]; i=2: sum 33 > 20 -> break.
  auto m = load(R"(
const L = 3
weights { h[L] { w: f32[2] } }
fn main(x: f32[2]) -> f32[2] {
  var y = x
  for i in 0..L {
    if sum(y) > 20.0 { break }
    y = y + h[i].w
  }
  return y
}
)");
  m->set_weights({{"h.0.w", f32s({1, 2})}, {"h.1.w", f32s({10, 20})}, {"h.2.w", f32s({100, 200})}});
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"x", f32s({0, 0})}})[0]), (std::vector<double>{11, 22}));
  // Starting at [30, 0], the first check breaks at once.
  EXPECT_EQ(values(s.run({{"x", f32s({30, 0})}})[0]), (std::vector<double>{30, 0}));
}

TEST(EndToEnd, IfElseChain) {
  // where-free branching on a device scalar.
  auto m = load(R"(
fn main(x: f32[2], k: i32[]) -> f32[2] {
  var y = x
  if k == 0 { y = y + 1.0 } else if k == 1 { y = y * 10.0 } else { y = -y }
  return y
}
)");
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"x", f32s({1, 2})}, {"k", Tensor::scalar_i32(0)}})[0]), (std::vector<double>{2, 3}));
  EXPECT_EQ(values(s.run({{"x", f32s({1, 2})}, {"k", Tensor::scalar_i32(1)}})[0]), (std::vector<double>{10, 20}));
  EXPECT_EQ(values(s.run({{"x", f32s({1, 2})}, {"k", Tensor::scalar_i32(7)}})[0]), (std::vector<double>{-1, -2}));
}

TEST(EndToEnd, SliceWriteInsideABranchIsPredicated) {
  // buf[t] = 5 only when t is even: t = 2 writes, t = 3 does not.
  auto m = load(R"(
fn main(t: i32[]) -> f32[4] {
  var buf = zeros((4), f32)
  if t % 2 == 0 { buf[t] = 5.0 }
  return buf
}
)");
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"t", Tensor::scalar_i32(2)}})[0]), (std::vector<double>{0, 0, 5, 0}));
  EXPECT_EQ(values(s.run({{"t", Tensor::scalar_i32(3)}})[0]), (std::vector<double>{0, 0, 0, 0}));
}

const char* kCounter = R"(
state counter: i32[] = zeros
state hist: f32[4] = full(-1.0)
fn main(x: f32[4]) -> i32[] {
  hist[counter % 4] = sum(x)
  counter = counter + 1
  return counter
}
)";

TEST(EndToEnd, StatePersistsAcrossRunsAndResets) {
  auto m = load(kCounter);
  Session s(m, "main");
  EXPECT_FALSE(s.state("counter").defined());  // created by the first run
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({1, 1, 1, 1})}})[0]), 1);
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({1, 2, 3, 4})}})[0]), 2);
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({0, 0, 0, 1})}})[0]), 3);
  EXPECT_EQ(scalar_int(s.state("counter")), 3);
  EXPECT_EQ(values(s.state("hist")), (std::vector<double>{4, 10, 1, -1}));
  s.reset_state();
  EXPECT_FALSE(s.state("counter").defined());
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({2, 2, 2, 2})}})[0]), 1);
  EXPECT_EQ(values(s.state("hist")), (std::vector<double>{8, -1, -1, -1}));
}

TEST(EndToEnd, SessionsHaveSeparateState) {
  auto m = load(kCounter);
  Session a(m, "main"), b(m, "main");
  a.run({{"x", f32s({0, 0, 0, 0})}});
  a.run({{"x", f32s({0, 0, 0, 0})}});
  EXPECT_EQ(scalar_int(b.run({{"x", f32s({0, 0, 0, 0})}})[0]), 1);
  EXPECT_EQ(scalar_int(a.state("counter")), 2);
}

TEST(EndToEnd, FailedRunLeavesStateUntouched) {
  auto m = load(kCounter);
  Session s(m, "main");
  s.run({{"x", f32s({1, 1, 1, 1})}});
  s.run({{"x", f32s({1, 1, 1, 1})}});
  auto hist_before = values(s.state("hist"));
  // Wrong shape, wrong dtype, missing and unknown inputs.
  EXPECT_THROW(s.run({{"x", f32s({1, 1, 1})}}), Error);
  EXPECT_THROW(s.run({{"x", Tensor::scalar_i32(1)}}), Error);
  EXPECT_THROW(s.run({}), Error);
  EXPECT_THROW(s.run({{"x", f32s({1, 1, 1, 1})}, {"y", f32s({1})}}), Error);
  EXPECT_EQ(scalar_int(s.state("counter")), 2);
  EXPECT_EQ(values(s.state("hist")), hist_before);
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({1, 1, 1, 1})}})[0]), 3);
}

TEST(EndToEnd, RunFailingMidwayLeavesStateUntouched) {
  // The division S/2 is only checked when the program runs: S = 3 fails after the state
  // tensors were read and updated in the run's own copy.
  auto m = load(R"(
state counter: i32[] = zeros
state buf: f32[4] = zeros
fn main(x: f32[S]) -> f32[S/2] {
  buf[counter % 4] = 9.0
  counter = counter + 1
  return zeros((S/2), f32) + x[0]
}
)");
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"x", f32s({3, 0})}})[0]), (std::vector<double>{3}));
  EXPECT_EQ(scalar_int(s.state("counter")), 1);
  EXPECT_THROW(s.run({{"x", f32s({1, 2, 3})}}), Error);
  EXPECT_EQ(scalar_int(s.state("counter")), 1);
  EXPECT_EQ(values(s.state("buf")), (std::vector<double>{9, 0, 0, 0}));
}

TEST(EndToEnd, StateUpdatedOnlyUnderItsPredicate) {
  auto m = load(R"(
state count: i32[] = zeros
fn main(x: f32[2]) -> i32[] {
  if sum(x) > 0.0 { count = count + 1 }
  return count
}
)");
  Session s(m, "main");
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({1, 0})}})[0]), 1);
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({-1, 0})}})[0]), 1);
  EXPECT_EQ(scalar_int(s.run({{"x", f32s({0, 2})}})[0]), 2);
}

TEST(EndToEnd, SymbolicDimMismatchNamesBothInputs) {
  auto m = load(R"(
fn main(a: f32[B], b: f32[B]) -> f32[B] { return a + b }
)");
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"a", f32s({1, 2})}, {"b", f32s({10, 20})}})[0]), (std::vector<double>{11, 22}));
  try {
    s.run({{"a", f32s({1, 2})}, {"b", f32s({1, 2, 3})}});
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'a'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'b'"), std::string::npos) << msg;
  }
}

// The Error that `f` throws (code and message), or code Internal with "<no throw>".
template <class F>
std::pair<ErrorCode, std::string> error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  return {ErrorCode::Internal, "<no throw>"};
}

TEST(EndToEnd, DimOverflowAtBindNamesInputAndDim) {
  // Empty inputs bind huge dims without any memory; B*S wrapped to 0 and matched y's empty dim.
  auto m = load(R"(
fn main(x: f32[C, B, S], y: f32[C, B*S]) -> f32[C, B*S] { return y }
)");
  Session s(m, "main");
  std::vector<std::pair<std::string, Tensor>> in = {{"x", Tensor(DType::F32, {0, int64_t{1} << 62, 4})},
                                                    {"y", Tensor(DType::F32, {0, 0})}};
  auto want = std::make_pair(ErrorCode::Type,
                             std::string("input 'y': dim B*S = 4611686018427387904 * 4 overflows int64"));
  EXPECT_EQ(error_of([&] { s.run(in); }), want);
  EXPECT_EQ(error_of([&] { s.output_shapes(in); }), want);
}

TEST(EndToEnd, StateShapeErrorsNameTheStateAndItsDeclaration) {
  auto m = load(R"(
state buf: f32[S - 8] = zeros
state big: f32[C, B*S] = zeros
fn main(x: f32[C, B, S]) -> f32[C, B, S] {
  buf = buf + 1.0
  big = big * 2.0
  return x
}
)");
  {
    Session s(m, "main");
    EXPECT_EQ(
        error_of([&] {
          s.run({{"x", Tensor(DType::F32, {0, 1, 4})}});
        }),
        std::make_pair(
            ErrorCode::Type,
            std::string(
                "test.grp:2:1: error: state 'buf': dim 0 is S - 8 = -4, negative (declared f32[S - 8])")));
  }
  {
    Session s(m, "main");
    EXPECT_EQ(
        error_of([&] {
          s.run({{"x", Tensor(DType::F32, {0, int64_t{1} << 62, 16})}});
        }),
        std::make_pair(
            ErrorCode::Type,
            std::string(
                "test.grp:3:1: error: state 'big': dim B*S = 4611686018427387904 * 16 overflows int64")));
  }
  {
    Session s(m, "main");
    s.run({{"x", Tensor(DType::F32, {0, 1, 10})}});
    EXPECT_EQ(error_of([&] {
                s.run({{"x", Tensor(DType::F32, {0, 1, 9})}});
              }).second,
              "test.grp:2:1: error: state 'buf' was created as f32[S - 8] = [2] by an earlier call; this "
              "call needs [1] "
              "(reset the session's state to change it)");
  }
  auto counter = load(kCounter);
  Session s(counter, "main");
  EXPECT_EQ(error_of([&] {
              s.set_state("hist", f32s({1, 2, 3}));
            }).second,
            "state 'hist': dim 0 is 3, expected 4 (declared f32[4] at test.grp:3:1)");
}

TEST(EndToEnd, DefineChangesShapes) {
  ModelOptions o;
  o.defines = {{"N", 3}};
  auto m = load(R"(
const N = 2
fn main(x: f32[N]) -> f32[] { return sum(x * cast(N, f32)) }
)",
                o);
  Session s(m, "main");
  // (1 + 2 + 3) * 3 = 18
  EXPECT_EQ(values(s.run({{"x", f32s({1, 2, 3})}})[0]), (std::vector<double>{18}));
  EXPECT_THROW(s.run({{"x", f32s({1, 2})}}), Error);
}

// Weights' signatures give every dim as text and as its size (TensorSignature's `fixed`); they gave
// only the text, so fuzz_program's size guard read every weight as one element and ran programs
// with millions of weights on the CPU under the sanitizers, near libFuzzer's per-input timeout.
TEST(EndToEnd, WeightSignaturesGiveEveryDimsSize) {
  auto m = load(R"(
const H = 6
weights {
  fc.weight: f16[H, 4]
  fc.bias: f16[H]
}
fn main(x: f16[B, 4]) -> f16[B, H] { return linear(x, fc.weight, fc.bias) }
)");
  const std::vector<TensorSignature> w = m->weight_signatures();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].name, "fc.weight");
  EXPECT_EQ(w[0].dtype, DType::F16);
  EXPECT_EQ(w[0].dims, (std::vector<std::string>{"6", "4"}));
  EXPECT_EQ(w[0].fixed, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(w[1].name, "fc.bias");
  EXPECT_EQ(w[1].fixed, (std::vector<int64_t>{6}));
  EXPECT_EQ(w[1].to_string(), "f16[6]");
}

TEST(EndToEnd, InlinedCallsWithIntParameters) {
  // layer(x, l) = x * h[l].w + l; main: layer(layer(x, 0), 1) with x = [1, 2], h.0.w = [2, 3],
  // h.1.w = [10, 100]: layer 0 -> [2, 6]; layer 1 -> [21, 601].
  auto m = load(R"(
weights { h[2] { w: f32[2] } }
fn layer(x: f32[N], l: int) -> f32[N] { return x * h[l].w + cast(l, f32) }
fn main(x: f32[2]) -> f32[2] { return layer(layer(x, 0), 1) }
)");
  m->set_weights({{"h.0.w", f32s({2, 3})}, {"h.1.w", f32s({10, 100})}});
  Session s(m, "main");
  EXPECT_EQ(values(s.run({{"x", f32s({1, 2})}})[0]), (std::vector<double>{21, 601}));
}

TEST(EndToEnd, SplitAndTopk) {
  // x = [5, 1, 4, 2, 3, 9]; split in 2: [5, 1, 4] and [2, 3, 9]; a + b = [7, 4, 13];
  // topk 2 of that: values [13, 7], indices [2, 0].
  auto m = load(R"(
fn main(x: f32[6]) -> (f32[2], i32[2]) {
  let a, b = split(x, 2)
  let v, i = topk(a + b, 2)
  return (v, i)
}
)");
  Session s(m, "main");
  auto out = s.run({{"x", f32s({5, 1, 4, 2, 3, 9})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<double>{13, 7}));
  EXPECT_EQ(values(out[1]), (std::vector<double>{2, 0}));
}

// Constant folding must agree with the f32 arithmetic of the unoptimized program: 16777217 is
// 16777216 in f32, so a - 16777216 is 0.
TEST(EndToEnd, FoldedF32ArithmeticMatchesUnfolded) {
  const char* src = R"(
fn main(x: f32[1]) -> f32[1] {
  var a: f32[] = 16777217.0
  return x + (a - 16777216.0)
}
)";
  ModelOptions no;
  no.optimize = false;
  Session plain(load(src, no), "main");
  Session opt(load(src), "main");
  auto want = values(plain.run({{"x", f32s({0})}})[0]);
  EXPECT_EQ(want, (std::vector<double>{0}));
  EXPECT_EQ(values(opt.run({{"x", f32s({0})}})[0]), want);
}

}  // namespace
}  // namespace grape

namespace grape {
namespace {

// 2049 is not an f16 value: it rounds (ties to even) to 2048, so `a == 2048.0` holds for
// `a: f16[] = 2049.0`, with or without optimization.
TEST(EndToEnd, FoldedF16ComparisonMatchesUnfolded) {
  const char* src = R"(
fn main(x: f32[1]) -> f32[1] {
  var a: f16[] = 2049.0
  var y = x
  if a == 2048.0 { y = y + 1.0 }
  return y
}
)";
  ModelOptions no;
  no.optimize = false;
  Session plain(Model::load_source(src, "test.grp", no), "main");
  Session opt(Model::load_source(src, "test.grp"), "main");
  Tensor x(DType::F32, {1});
  EXPECT_EQ(plain.run({{"x", x}})[0].get(0), 1.0);
  EXPECT_EQ(opt.run({{"x", x}})[0].get(0), 1.0);
}

}  // namespace
}  // namespace grape

namespace grape {
namespace {

// Regression (found by the differential tests): `x[n:n+k]` with a device scalar n was rejected;
// language.md promises dynamic slices of static size.
TEST(EndToEnd, DynamicSliceOfStaticSize) {
  auto m = Model::load_source("fn main(x: f32[8], n: i32[]) -> f32[3] {\n  return x[n:n+3] * 2.0\n}\n", "t.grp");
  Session s(m, "main");
  Tensor x(DType::F32, {8});
  for (int i = 0; i < 8; ++i) x.set(i, i);  // x = 0..7
  // n = 2: x[2:5] = [2, 3, 4] -> [4, 6, 8]
  auto out = s.run({{"x", x}, {"n", Tensor::scalar_i32(2)}});
  EXPECT_EQ(out[0].get(0), 4);
  EXPECT_EQ(out[0].get(2), 8);
  // n = 6 is clamped so that 3 elements fit: start 5 -> [5, 6, 7] -> [10, 12, 14]
  out = s.run({{"x", x}, {"n", Tensor::scalar_i32(6)}});
  EXPECT_EQ(out[0].get(0), 10);
  EXPECT_EQ(out[0].get(2), 14);
  // n = -2 counts from the end once: 6, then clamped to 5 -> [10, 12, 14]
  out = s.run({{"x", x}, {"n", Tensor::scalar_i32(-2)}});
  EXPECT_EQ(out[0].get(0), 10);
}

}  // namespace
}  // namespace grape

namespace grape {
namespace {

// Regression (found by the GPU op tests): a strided slice whose length is not a multiple of the
// step (x[2:8:4] has 2 elements) was rejected without a diagnostic, which surfaced as an
// internal error.
TEST(EndToEnd, StridedSliceWithRemainder) {
  auto m = Model::load_source("fn main(x: f32[8]) -> f32[2] {\n  return x[1:8:4]\n}\n", "t.grp");
  Session s(m, "main");
  Tensor x(DType::F32, {8});
  for (int i = 0; i < 8; ++i) x.set(i, 10 * i);
  auto out = s.run({{"x", x}});
  EXPECT_EQ(out[0].get(0), 10);  // x[1]
  EXPECT_EQ(out[0].get(1), 50);  // x[5]
}

}  // namespace
}  // namespace grape
