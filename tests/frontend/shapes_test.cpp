// Shape and dtype inference, consts and -D overrides, symbolic dims, inlined calls, tuples.
// Most checks declare the expected result type in the signature: the front end reports an error
// when the inferred type differs, so compiling is the check.
#include <gtest/gtest.h>

#include "tests/frontend/frontend_test_util.h"

namespace grape::testing {
namespace {

using ir::Dim;
using ir::Op;

std::string type_of_result(const Compiled& c, size_t i = 0, const std::string& fn = "main") {
  const ir::Function& f = c.fn(fn);
  return f.type(f.body.yields.at(i)).str();
}

TEST(Shapes, DefineOverridesConst) {
  const char* src = R"(
const N = 4
weights { w: f32[N, 2] }
fn main(x: f32[B, N]) -> f32[B, 2] { return x @ w }
)";
  COMPILE_OK(a, src);
  EXPECT_EQ(a->fn().params[0].type.str(), "f32[B, 4]");
  EXPECT_EQ(a->module->weights[0].shape, (std::vector<int64_t>{4, 2}));
  COMPILE_OK(b, src, {{"N", 7}});
  EXPECT_EQ(b->fn().params[0].type.str(), "f32[B, 7]");
  EXPECT_EQ(b->module->weights[0].shape, (std::vector<int64_t>{7, 2}));
}

TEST(Shapes, DefineOverrideFlowsIntoDependentConsts) {
  const char* src = R"(
const E = 8
const NH = 2
const HD = E / NH
fn main(x: f32[B, E]) -> f32[B, NH, HD] { return reshape(x, (B, NH, HD)) }
)";
  COMPILE_OK(a, src);
  EXPECT_EQ(type_of_result(*a), "f32[B, 2, 4]");
  COMPILE_OK(b, src, {{"E", 12}, {"NH", 3}});
  EXPECT_EQ(type_of_result(*b), "f32[B, 3, 4]");
}

TEST(Shapes, ConstsInShapes) {
  COMPILE_OK(c, R"(
const H = 8
fn main(x: f32[B, H]) -> f32[B, 2*H] { return concat((x, x), axis=1) }
)");
  EXPECT_EQ(type_of_result(*c), "f32[B, 16]");
  EXPECT_EQ(c->fn().result_types[0].str(), "f32[B, 16]");
}

TEST(Shapes, SymbolicDimsUnifyAcrossParameters) {
  COMPILE_OK(c, R"(
fn main(a: f32[B, S], b: f32[B, S], t: f32[S + 1]) -> f32[B, S] { return a + b }
)");
  const ir::Function& f = c->fn();
  EXPECT_EQ(f.symbols, (std::vector<std::string>{"B", "S"}));
  EXPECT_EQ(f.params[0].type, f.params[1].type);
  EXPECT_EQ(f.params[2].type.shape[0], Dim::sym("S") + 1);
}

TEST(Shapes, DifferentSymbolsDoNotBroadcast) {
  auto c = compile(R"(
fn main(a: f32[B, S], b: f32[S, B]) -> f32[B, S] { return a + b }
)");
  ASSERT_FALSE(c->ok());
  EXPECT_NE(c->errors().find("f32[B, S] and f32[S, B]"), std::string::npos) << c->errors();
}

TEST(Shapes, SymbolicArithmeticInResultTypes) {
  COMPILE_OK(c, R"(
fn main(a: f32[S, 4], b: f32[T, 4]) -> f32[S + T, 4] { return concat((a, b), axis=0) }
)");
  EXPECT_EQ(type_of_result(*c), "f32[S + T, 4]");
}

TEST(Shapes, MatmulBroadcasting) {
  COMPILE_OK(c, R"(
fn main(a: f32[B, 1, S, K], b: f32[H, K, N], v: f32[K], m: f32[S, K]) -> (f32[B, H, S, N], f32[N], f32[S], f32[]) {
  return (a @ b, v @ b[0], m @ v, v @ v)
}
)");
  EXPECT_EQ(type_of_result(*c, 0), "f32[B, H, S, N]");
  EXPECT_EQ(type_of_result(*c, 1), "f32[N]");
  EXPECT_EQ(type_of_result(*c, 2), "f32[S]");
  EXPECT_EQ(type_of_result(*c, 3), "f32[]");
}

TEST(Shapes, MatmulInnerMismatchNamesBothShapes) {
  auto c = compile(R"(
fn main(a: f32[B, 3], b: f32[4, N]) -> f32[B, N] { return a @ b }
)");
  ASSERT_FALSE(c->ok());
  EXPECT_NE(c->errors().find("f32[B, 3] @ f32[4, N]"), std::string::npos) << c->errors();
}

TEST(Shapes, ReshapeWithMinusOne) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, 12], y: f32[2, 3]) -> (f32[B, 3, 4], f32[6], f32[B, 12]) {
  return (reshape(x, (B, -1, 4)), reshape(y, (-1)), reshape(reshape(x, (-1, 3)), (B, 12)))
}
)");
  EXPECT_EQ(type_of_result(*c, 0), "f32[B, 3, 4]");
  EXPECT_EQ(type_of_result(*c, 1), "f32[6]");
}

TEST(Shapes, ReshapeWithMinusOneSymbolic) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, S, 8]) -> f32[B, S, 2, 4] { return reshape(x, (B, -1, 2, 4)) }
)");
  EXPECT_EQ(type_of_result(*c), "f32[B, S, 2, 4]");
}

TEST(Shapes, Concat) {
  COMPILE_OK(c, R"(
fn main(a: f32[B, 2], b: f32[B, 3]) -> f32[B, 5] { return concat((a, b), axis=-1) }
)");
  auto cs = ops_of(c->fn(), Op::Concat);
  ASSERT_EQ(cs.size(), 1u);
  EXPECT_EQ(cs[0]->attrs.axis, 1);  // normalized
}

TEST(Shapes, Take) {
  COMPILE_OK(c, R"(
fn main(emb: f32[V, E], ids: i32[B, S], x: f32[B, K, E], j: i32[2]) -> (f32[B, S, E], f32[B, 2, E]) {
  return (take(emb, ids, axis=0), take(x, j, axis=1))
}
)");
  EXPECT_EQ(type_of_result(*c, 0), "f32[B, S, E]");
  EXPECT_EQ(type_of_result(*c, 1), "f32[B, 2, E]");
}

TEST(Shapes, Reductions) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, S, E]) -> (f32[B, 1, E], f32[S], f32[], i32[B, S], f32[B, S, 1], bool[B]) {
  return (sum(x, axis=1, keepdims=true), mean(x, axis=(0, 2)), sum(x), argmax(x, axis=-1),
          max(x, axis=-1, keepdims=true), any(x > 0.0, axis=(1, 2)))
}
)");
  const ir::Function& f = c->fn();
  EXPECT_EQ(type_of_result(*c, 0), "f32[B, 1, E]");
  const ir::Operation* s = def_of(f, f.body.yields[0]);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->op, Op::Sum);
  EXPECT_TRUE(s->attrs.keepdims);
  EXPECT_EQ(s->attrs.axes, (std::vector<int64_t>{1}));
}

TEST(Shapes, SplitUnpacksIntoEqualParts) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, 6]) -> (f32[B, 3], f32[B, 3]) {
  let a, b = split(x, 2, axis=1)
  return (a, b)
}
)");
  const ir::Function& f = c->fn();
  auto slices = ops_of(f, Op::Slice);
  ASSERT_EQ(slices.size(), 2u) << c->ir();
  EXPECT_TRUE(slices[0]->attrs.slices[1].start.is_const(0));
  EXPECT_TRUE(slices[1]->attrs.slices[1].start.is_const(3));
  EXPECT_TRUE(slices[1]->attrs.slices[1].size.is_const(3));
  EXPECT_EQ(f.body.yields[0], slices[0]->results[0]);
  EXPECT_EQ(f.body.yields[1], slices[1]->results[0]);
}

TEST(Shapes, SplitOfASymbolicMultiple) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, 3*E], e: f32[E]) -> f32[B, E] {
  let q, k, v = split(x, 3, axis=-1)
  return q + k + v
}
)");
  auto slices = ops_of(c->fn(), Op::Slice);
  ASSERT_EQ(slices.size(), 3u);
  EXPECT_EQ(slices[2]->attrs.slices[1].start, Dim(2) * Dim::sym("E"));
}

TEST(Shapes, SplitUnpackCountMismatch) {
  auto c = compile(R"(
fn main(x: f32[B, 6]) -> f32[B, 2] {
  let a, b = split(x, 3, axis=1)
  return a
}
)");
  ASSERT_FALSE(c->ok());
  EXPECT_NE(c->errors().find("3:14: cannot unpack a tuple of 3 values into 2 names"), std::string::npos) << c->errors();
}

TEST(Shapes, TopkReturnsValuesAndIndices) {
  COMPILE_OK(c, R"(
fn main(x: f32[B, 5]) -> (f32[B, 2], i32[B, 2]) {
  let v, i = topk(x, 2)
  return (v, i)
}
)");
  const ir::Function& f = c->fn();
  auto tk = ops_of(f, Op::TopK);
  ASSERT_EQ(tk.size(), 1u);
  EXPECT_EQ(tk[0]->results.size(), 2u);
  EXPECT_EQ(tk[0]->attrs.k, 2);
  EXPECT_EQ(f.body.yields, tk[0]->results);
}

TEST(Shapes, TopkTupleIndexing) {
  COMPILE_OK(c, R"(
fn main(x: f32[4, 6]) -> i32[3, 6] { return topk(x, 3, axis=0)[1] }
)");
  EXPECT_EQ(type_of_result(*c), "i32[3, 6]");
}

TEST(Functions, InlinedCallWithIntParameter) {
  COMPILE_OK(c, R"(
const L = 2
weights { h[L] { w: f32[4] } }
fn scale(x: f32[N], k: int) -> f32[N] { return x * k }
fn layer(x: f32[4], l: int) -> f32[4] { return x * h[l].w }
fn main(x: f32[4]) -> f32[4] { return layer(layer(scale(x, 3), 0), 1) }
)");
  // Functions with `int` parameters are not entry points.
  ASSERT_EQ(c->module->functions.size(), 1u);
  EXPECT_EQ(c->module->functions[0].name, "main");
  const ir::Function& f = c->fn();
  auto ws = ops_of(f, Op::Weight);
  ASSERT_EQ(ws.size(), 2u) << c->ir();
  EXPECT_EQ(ws[0]->attrs.name, "h.0.w");
  EXPECT_EQ(ws[1]->attrs.name, "h.1.w");
  // `x * k` with k = 3: an f32 constant 3.
  bool found = false;
  for (const auto* op : ops_of(f, Op::Constant))
    found |= op->attrs.dtype == DType::F32 && op->attrs.fvalue == 3.0;
  EXPECT_TRUE(found) << c->ir();
}

TEST(Functions, IntParameterInAShape) {
  COMPILE_OK(c, R"(
fn head(x: f32[S, E], n: int) -> f32[n, E] { return x[0:n] }
fn main(x: f32[8, 4]) -> f32[3, 4] { return head(x, 3) }
)");
  EXPECT_EQ(type_of_result(*c), "f32[3, 4]");
}

TEST(Functions, SymbolicDimsBindPerCall) {
  COMPILE_OK(c, R"(
fn twice(x: f32[N]) -> f32[2*N] { return concat((x, x), axis=0) }
fn main(a: f32[3], b: f32[S]) -> (f32[6], f32[2*S]) { return (twice(a), twice(b)) }
)");
  EXPECT_EQ(type_of_result(*c, 0), "f32[6]");
  EXPECT_EQ(type_of_result(*c, 1), "f32[2*S]");
}

TEST(Functions, CalledFunctionTupleResult) {
  COMPILE_OK(c, R"(
fn pair(x: f32[N]) -> (f32[N], f32[N]) { return (x + 1.0, x - 1.0) }
fn main(x: f32[4]) -> f32[4] {
  let a, b = pair(x)
  return a * b
}
)");
  EXPECT_EQ(ops_of(c->fn(), Op::Mul).size(), 1u);
}

TEST(Dtypes, LiteralAdoptsTensorDtype) {
  COMPILE_OK(c, R"(
fn main(x: f16[4], i: i32[4]) -> (f16[4], f16[4], i32[4], f32[]) {
  return (x * 2, x + 0.5, i - 1, 1.5 + cast(i[0], f32))
}
)");
  const ir::Function& f = c->fn();
  int f16_consts = 0;
  for (const auto* op : ops_of(f, Op::Constant)) f16_consts += op->attrs.dtype == DType::F16;
  EXPECT_EQ(f16_consts, 2) << c->ir();
}

TEST(Dtypes, BareLiteralsAreI32AndF32) {
  COMPILE_OK(c, R"(
fn main(x: f32[4]) -> (i32[], f32[], bool[]) {
  var a = 1
  var b = 2.5
  var t = true
  return (a, b, t)
}
)");
  EXPECT_EQ(type_of_result(*c, 0), "i32[]");
  EXPECT_EQ(type_of_result(*c, 1), "f32[]");
  EXPECT_EQ(type_of_result(*c, 2), "bool[]");
}

TEST(Dtypes, ComparisonIsBool) {
  COMPILE_OK(c, R"(
fn main(x: f16[B, 4]) -> bool[B, 4] { return x > 0 }
)");
  EXPECT_EQ(type_of_result(*c), "bool[B, 4]");
}

TEST(Dtypes, MixedTensorDtypesAreAnError) {
  auto c = compile(R"(
fn main(a: f16[4], b: f32[4]) -> f32[4] { return a + b }
)");
  ASSERT_FALSE(c->ok());
  EXPECT_NE(c->errors().find("dtype mismatch"), std::string::npos) << c->errors();
  EXPECT_NE(c->errors().find("f16[4] and f32[4]"), std::string::npos) << c->errors();
}

TEST(Dtypes, ExplicitCastFixesTheMismatch) {
  COMPILE_OK(c, R"(
fn main(a: f16[4], b: f32[4]) -> f32[4] { return cast(a, f32) + b }
)");
  auto casts = ops_of(c->fn(), Op::Cast);
  ASSERT_EQ(casts.size(), 1u);
  EXPECT_EQ(casts[0]->attrs.dtype, DType::F32);
}

}  // namespace
}  // namespace grape::testing
