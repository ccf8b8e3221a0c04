// Dead-code elimination: exact op lists after the pass.
#include "ir/passes/dce.h"

#include <gtest/gtest.h>

#include "ir/verifier.h"
#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

// Runs DCE and checks the result still verifies.
bool dce(Function& f) {
  bool changed = eliminate_dead_code(f);
  auto problems = verify(f);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << print_function(f);
  return changed;
}

TEST(Dce, RemovesUnusedPureOps) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  b.op(Op::Neg, {x}, f32({4}));
  ValueId e = b.op(Op::Exp, {x}, f32({4}));
  b.op(Op::Add, {e, e}, f32({4}));
  b.ret({e});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4]) -> (f32[4]) {\n"
            "  %1 = exp %0 : f32[4]\n"
            "  return %1\n"
            "}\n");
}

TEST(Dce, RemovesDeadChains) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId a = b.op(Op::Neg, {x}, f32({4}));
  ValueId c = b.op(Op::Exp, {a}, f32({4}));
  b.op(Op::Sum, {c}, f32(), axes({0}));
  b.ret({x});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4]) -> (f32[4]) {\n"
            "  return %0\n"
            "}\n");
}

TEST(Dce, NothingToDoReportsNoChange) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId e = b.op(Op::Exp, {x}, f32({4}));
  b.ret({e});
  std::string before = b.print();
  EXPECT_FALSE(dce(b.f));
  EXPECT_EQ(b.print(), before);
}

TEST(Dce, KeepsStateWriteAndItsInputs) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId s = b.op(Op::StateRead, {}, f32({4}), named("s"));
  ValueId a = b.op(Op::Add, {s, x}, f32({4}));
  ValueId p = b.op(Op::Gt, {b.op(Op::Sum, {x}, f32(), axes({0})), b.cf32(0)}, boolean());
  ValueId w = b.op(Op::Exp, {a}, f32({4}), {}, p);  // live only through the write (and its predicate)
  ValueId sel = b.op(Op::Select, {p, w, s}, f32({4}));
  b.op(Op::Sin, {x}, f32({4}));
  b.effect(Op::StateWrite, {sel}, named("s"));
  b.ret({x});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4]) -> (f32[4]) {\n"
            "  %1 = state_read {\"s\"} : f32[4]\n"
            "  %2 = add %1, %0 : f32[4]\n"
            "  %3 = sum %0 {axes=(0)} : f32[]\n"
            "  %4 = constant {f32, value=0} : f32[]\n"
            "  %5 = gt %3, %4 : bool[]\n"
            "  %6 = exp %2 if %5 : f32[4]\n"
            "  %7 = select %5, %6, %1 : f32[4]\n"
            "  state_write %7 {\"s\"}\n"
            "  return %0\n"
            "}\n");
}

TEST(Dce, KeepsPredicateOfALiveOp) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId c = b.param("c", boolean());
  ValueId nc = b.op(Op::Not, {c}, boolean());
  ValueId e = b.op(Op::Exp, {x}, f32({4}), {}, nc);
  b.ret({e});
  EXPECT_FALSE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 c: bool[]) -> (f32[4]) {\n"
            "  %2 = not %1 : bool[]\n"
            "  %3 = exp %0 if %2 : f32[4]\n"
            "  return %3\n"
            "}\n");
}

// i drives the condition, acc is returned, dead is neither: dead goes, i stays even though its
// result after the loop is unused.
TEST(Dce, PrunesDeadLoopCarriedValuesButKeepsTheCondition) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId n = b.param("n", i32());
  ValueId zero = b.ci32(0);
  ValueId c0 = b.op(Op::Lt, {zero, n}, boolean());
  auto h = b.begin_loop(c0, {zero, x, x}, 8);
  ValueId i = h.params[0], acc = h.params[1], dead = h.params[2];
  ValueId i2 = b.op(Op::Add, {i, b.ci32(1)}, i32());
  ValueId acc2 = b.op(Op::Add, {acc, x}, f32({4}));
  ValueId dead2 = b.op(Op::Neg, {dead}, f32({4}));
  ValueId c = b.op(Op::Lt, {i2, n}, boolean());
  auto r = b.end_loop(h, c, {i2, acc2, dead2});
  b.ret({r[1]});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 n: i32[]) -> (f32[4]) {\n"
            "  %2 = constant {i32, value=0} : i32[]\n"
            "  %3 = lt %2, %1 : bool[]\n"
            "  %4, %5 = loop %3, %2, %0 {max=8} : i32[], f32[4] {\n"
            "  ^(%6, %7):\n"
            "    %8 = constant {i32, value=1} : i32[]\n"
            "    %9 = add %6, %8 : i32[]\n"
            "    %10 = add %7, %0 : f32[4]\n"
            "    %11 = lt %9, %1 : bool[]\n"
            "    yield %11, %9, %10\n"
            "  }\n"
            "  return %5\n"
            "}\n");
}

// A carried value whose result is unused but which feeds a live carried value stays.
TEST(Dce, KeepsCarriedValuesFeedingLiveOnes) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  auto h = b.begin_loop(go, {x, x}, 4);
  ValueId t = h.params[0], acc = h.params[1];
  ValueId t2 = b.op(Op::Exp, {t}, f32({4}));
  ValueId acc2 = b.op(Op::Add, {acc, t}, f32({4}));
  auto r = b.end_loop(h, go, {t2, acc2});
  b.ret({r[1]});
  EXPECT_FALSE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 go: bool[]) -> (f32[4]) {\n"
            "  %2, %3 = loop %1, %0, %0 {max=4} : f32[4], f32[4] {\n"
            "  ^(%4, %5):\n"
            "    %6 = exp %4 : f32[4]\n"
            "    %7 = add %5, %4 : f32[4]\n"
            "    yield %1, %6, %7\n"
            "  }\n"
            "  return %3\n"
            "}\n");
}

TEST(Dce, RemovesAnUnusedLoop) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.op(Op::Not, {b.cbool(false)}, boolean());
  auto h = b.begin_loop(go, {x}, 4);
  ValueId y = b.op(Op::Exp, {h.params[0]}, f32({4}));
  b.end_loop(h, b.cbool(false), {y});
  b.ret({x});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4]) -> (f32[4]) {\n"
            "  return %0\n"
            "}\n");
}

TEST(Dce, RemovesDeadOpsInsideALoopBody) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  auto h = b.begin_loop(go, {x}, 4);
  b.op(Op::Sin, {h.params[0]}, f32({4}));
  ValueId y = b.op(Op::Exp, {h.params[0]}, f32({4}));
  auto r = b.end_loop(h, go, {y});
  b.ret({r[0]});
  EXPECT_TRUE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 go: bool[]) -> (f32[4]) {\n"
            "  %2 = loop %1, %0 {max=4} : f32[4] {\n"
            "  ^(%3):\n"
            "    %4 = exp %3 : f32[4]\n"
            "    yield %1, %4\n"
            "  }\n"
            "  return %2\n"
            "}\n");
}

// An outer value used only inside a loop body stays alive.
TEST(Dce, KeepsOuterValuesUsedInTheBody) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  ValueId e = b.op(Op::Exp, {x}, f32({4}));
  auto h = b.begin_loop(go, {x}, 4);
  ValueId y = b.op(Op::Add, {h.params[0], e}, f32({4}));
  auto r = b.end_loop(h, go, {y});
  b.ret({r[0]});
  EXPECT_FALSE(dce(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 go: bool[]) -> (f32[4]) {\n"
            "  %2 = exp %0 : f32[4]\n"
            "  %3 = loop %1, %0 {max=4} : f32[4] {\n"
            "  ^(%4):\n"
            "    %5 = add %4, %2 : f32[4]\n"
            "    yield %1, %5\n"
            "  }\n"
            "  return %3\n"
            "}\n");
}

// ir/passes/dce.h: "ops with side effects stay". A state_write inside a loop body is a side
// effect of the loop even when none of the loop's results is used.
TEST(Dce, KeepsALoopWhoseBodyHasASideEffect) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId go = b.param("go", boolean());
  auto h = b.begin_loop(go, {x}, 4);
  ValueId y = b.op(Op::Exp, {h.params[0]}, f32({4}));
  b.effect(Op::StateWrite, {y}, named("s"));
  b.end_loop(h, go, {y});
  b.ret({x});
  std::string before = b.print();
  dce(b.f);
  EXPECT_EQ(b.print(), before);
}

}  // namespace
}  // namespace grape::ir
