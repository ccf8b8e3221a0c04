// Common-subexpression elimination: exact op lists after the pass.
#include "ir/passes/cse.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

bool cse(Function& f) {
  bool changed = eliminate_common_subexpressions(f);
  auto problems = verify(f);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << print_function(f);
  return changed;
}

TEST(Cse, MergesIdenticalOps) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.param("y", f32({4}));
  ValueId a1 = b.op(Op::Add, {x, y}, f32({4}));
  ValueId a2 = b.op(Op::Add, {x, y}, f32({4}));
  ValueId m = b.op(Op::Mul, {a1, a2}, f32({4}));
  ValueId m2 = b.op(Op::Mul, {a2, a1}, f32({4}));  // becomes mul a1, a1: merges too
  b.ret({m, m2});
  EXPECT_TRUE(cse(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 y: f32[4]) -> (f32[4], f32[4]) {\n"
            "  %2 = add %0, %1 : f32[4]\n"
            "  %3 = mul %2, %2 : f32[4]\n"
            "  return %3, %3\n"
            "}\n");
}

TEST(Cse, OperandOrderMatters) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.param("y", f32({4}));
  ValueId a1 = b.op(Op::Sub, {x, y}, f32({4}));
  ValueId a2 = b.op(Op::Sub, {y, x}, f32({4}));
  b.ret({a1, a2});
  EXPECT_FALSE(cse(b.f));
}

TEST(Cse, MergesIdenticalConstantsOnly) {
  Builder b;
  ValueId c1 = b.cf32(1.5);
  ValueId c2 = b.cf32(1.5);
  ValueId c3 = b.cf32(2.5);
  ValueId c4 = b.ci32(1);
  ValueId c5 = b.ci32(1);
  b.ret({c1, c2, c3, c4, c5});
  EXPECT_TRUE(cse(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (f32[], f32[], f32[], i32[], i32[]) {\n"
            "  %0 = constant {f32, value=1.5} : f32[]\n"
            "  %1 = constant {f32, value=2.5} : f32[]\n"
            "  %2 = constant {i32, value=1} : i32[]\n"
            "  return %0, %0, %1, %2, %2\n"
            "}\n");
}

TEST(Cse, DifferentPredicatesAreNotMerged) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId p = b.param("p", boolean());
  ValueId q = b.param("q", boolean());
  ValueId a = b.op(Op::Neg, {x}, f32({4}), {}, p);
  ValueId c = b.op(Op::Neg, {x}, f32({4}), {}, q);
  ValueId d = b.op(Op::Neg, {x}, f32({4}));
  ValueId e = b.op(Op::Neg, {x}, f32({4}), {}, p);
  b.ret({a, c, d, e});
  EXPECT_TRUE(cse(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 p: bool[], %2 q: bool[]) -> (f32[4], f32[4], f32[4], f32[4]) {\n"
            "  %3 = neg %0 if %1 : f32[4]\n"
            "  %4 = neg %0 if %2 : f32[4]\n"
            "  %5 = neg %0 : f32[4]\n"
            "  return %3, %4, %5, %3\n"
            "}\n");
}

TEST(Cse, DifferentAttributesAreNotMerged) {
  Builder b;
  ValueId x = b.param("x", f32({4, 4}));
  ValueId s0 = b.op(Op::Sum, {x}, f32({4}), axes({0}));
  ValueId s1 = b.op(Op::Sum, {x}, f32({4}), axes({1}));
  ValueId s0k = b.op(Op::Sum, {x}, f32({1, 4}), axes({0}, true));
  ValueId s0b = b.op(Op::Sum, {x}, f32({4}), axes({0}));
  Attrs g1, g2;
  g2.approx_tanh = true;
  ValueId ga = b.op(Op::Gelu, {x}, f32({4, 4}), g1);
  ValueId gb = b.op(Op::Gelu, {x}, f32({4, 4}), g2);
  b.ret({s0, s1, s0k, s0b, ga, gb});
  EXPECT_TRUE(cse(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4, 4]) -> (f32[4], f32[4], f32[1, 4], f32[4], f32[4, 4], f32[4, 4]) {\n"
            "  %1 = sum %0 {axes=(0)} : f32[4]\n"
            "  %2 = sum %0 {axes=(1)} : f32[4]\n"
            "  %3 = sum %0 {axes=(0), keepdims} : f32[1, 4]\n"
            "  %4 = gelu %0 : f32[4, 4]\n"
            "  %5 = gelu %0 {approximate=tanh} : f32[4, 4]\n"
            "  return %1, %2, %3, %1, %4, %5\n"
            "}\n");
}

TEST(Cse, SideEffectsAndLoopsAreNotMerged) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  b.effect(Op::StateWrite, {x}, named("s"));
  b.effect(Op::StateWrite, {x}, named("s"));
  auto h1 = b.begin_loop(go, {x}, 2);
  auto r1 = b.end_loop(h1, go, {h1.params[0]});
  auto h2 = b.begin_loop(go, {x}, 2);
  auto r2 = b.end_loop(h2, go, {h2.params[0]});
  b.ret({r1[0], r2[0]});
  std::string before = b.print();
  EXPECT_FALSE(cse(b.f));
  EXPECT_EQ(b.print(), before);
}

// Inside a loop body, ops identical to outer ones reuse them; identical body ops merge; body ops
// are not available after the loop.
TEST(Cse, AcrossALoopBody) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  ValueId e = b.op(Op::Exp, {x}, f32({4}));
  auto h = b.begin_loop(go, {x}, 4);
  ValueId e2 = b.op(Op::Exp, {x}, f32({4}));         // same as the outer e
  ValueId a1 = b.op(Op::Add, {h.params[0], e2}, f32({4}));
  ValueId a2 = b.op(Op::Add, {h.params[0], e}, f32({4}));  // same as a1 once e2 -> e
  ValueId n1 = b.op(Op::Neg, {x}, f32({4}));
  ValueId m = b.op(Op::Mul, {a1, a2}, f32({4}));
  ValueId m2 = b.op(Op::Add, {m, n1}, f32({4}));
  auto r = b.end_loop(h, go, {m2});
  ValueId n2 = b.op(Op::Neg, {x}, f32({4}));  // the body's neg does not dominate this one
  ValueId out = b.op(Op::Add, {r[0], n2}, f32({4}));
  b.ret({out});
  EXPECT_TRUE(cse(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 go: bool[]) -> (f32[4]) {\n"
            "  %2 = exp %0 : f32[4]\n"
            "  %3 = loop %1, %0 {max=4} : f32[4] {\n"
            "  ^(%4):\n"
            "    %5 = add %4, %2 : f32[4]\n"
            "    %6 = neg %0 : f32[4]\n"
            "    %7 = mul %5, %5 : f32[4]\n"
            "    %8 = add %7, %6 : f32[4]\n"
            "    yield %1, %8\n"
            "  }\n"
            "  %9 = neg %0 : f32[4]\n"
            "  %10 = add %3, %9 : f32[4]\n"
            "  return %10\n"
            "}\n");
}

// Two sibling loops: an op in the second body is not replaced by one in the first.
TEST(Cse, SiblingLoopBodiesAreIndependent) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  auto h1 = b.begin_loop(go, {x}, 2);
  ValueId y1 = b.op(Op::Add, {h1.params[0], b.op(Op::Exp, {x}, f32({4}))}, f32({4}));
  auto r1 = b.end_loop(h1, go, {y1});
  auto h2 = b.begin_loop(go, {r1[0]}, 2);
  ValueId y2 = b.op(Op::Add, {h2.params[0], b.op(Op::Exp, {x}, f32({4}))}, f32({4}));
  auto r2 = b.end_loop(h2, go, {y2});
  b.ret({r2[0]});
  EXPECT_FALSE(cse(b.f));
}

}  // namespace
}  // namespace grape::ir
