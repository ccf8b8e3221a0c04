// The IR verifier: a well-formed function passes; each kind of malformation is reported.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += x + "\n";
  return s;
}

// True if some problem contains `fragment`.
::testing::AssertionResult reports(const Function& f, const std::string& fragment) {
  auto problems = verify(f);
  for (const auto& p : problems)
    if (p.find(fragment) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no problem mentions '" << fragment << "'; got:\n"
                                       << joined(problems) << print_function(f);
}

// x: f32[B, 4], n: i32[]; sums x over a device loop `while i < n max 8`, with a predicated op.
Builder well_formed() {
  Builder b;
  Dim B = Dim::sym("B");
  ValueId x = b.param("x", f32({B, 4}));
  ValueId n = b.param("n", i32());
  ValueId zero = b.ci32(0);
  ValueId c0 = b.op(Op::Lt, {zero, n}, boolean());
  auto h = b.begin_loop(c0, {zero, x}, 8);
  ValueId i = h.params[0], acc = h.params[1];
  ValueId one = b.ci32(1);
  ValueId i2 = b.op(Op::Add, {i, one}, i32());
  ValueId odd = b.op(Op::Eq, {b.op(Op::Mod, {i, b.ci32(2)}, i32()), one}, boolean());
  ValueId acc2 = b.op(Op::Add, {acc, x}, f32({B, 4}), {}, odd);
  ValueId merged = b.op(Op::Select, {odd, acc2, acc}, f32({B, 4}));
  ValueId c = b.op(Op::Lt, {i2, n}, boolean());
  auto r = b.end_loop(h, c, {i2, merged});
  ValueId s = b.op(Op::Sum, {r[1]}, f32({B}), axes({1}));
  b.effect(Op::StateWrite, {r[0]}, named("steps"));
  b.ret({s});
  return b;
}

TEST(Verifier, WellFormedFunctionPasses) {
  Builder b = well_formed();
  EXPECT_EQ(joined(verify(b.f)), "") << b.print();
  EXPECT_NO_THROW(verify_or_throw(b.f, "test"));
}

TEST(Verifier, EmptyFunctionPasses) {
  Builder b;
  ValueId x = b.param("x", f32({2}));
  b.ret({x});
  EXPECT_TRUE(verify(b.f).empty());
}

TEST(Verifier, UseBeforeDefinition) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId later = b.f.new_value(f32({4}));  // defined below, used first
  ValueId y = b.op(Op::Add, {x, later}, f32({4}));
  Operation def;
  def.op = Op::Neg;
  def.operands = {x};
  def.results = {later};
  b.f.body.ops.push_back(def);
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "before its definition"));
}

TEST(Verifier, UndefinedValueAndInvalidId) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId ghost = b.f.new_value(f32({4}));  // never defined
  ValueId y = b.op(Op::Add, {x, ghost}, f32({4}));
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "before its definition"));

  Builder c;
  ValueId x2 = c.param("x", f32({4}));
  ValueId z = c.op(Op::Add, {x2, 99}, f32({4}));
  c.ret({z});
  EXPECT_TRUE(reports(c.f, "invalid value id 99"));
}

TEST(Verifier, ValueFromLoopBodyUsedAfterTheLoop) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  auto h = b.begin_loop(b.cbool(true), {x}, 1);
  ValueId inner = b.op(Op::Neg, {h.params[0]}, f32({4}));
  auto r = b.end_loop(h, b.cbool(false), {inner});
  ValueId y = b.op(Op::Add, {r[0], inner}, f32({4}));
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "before its definition"));
}

TEST(Verifier, WrongOperandCount) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::Add, {x}, f32({4}));
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "add: 1 operands"));

  Builder c;
  ValueId x2 = c.param("x", f32({4}));
  ValueId z = c.op(Op::Neg, {x2, x2}, f32({4}));
  c.ret({z});
  EXPECT_TRUE(reports(c.f, "neg: 2 operands"));

  Builder d;
  ValueId x3 = d.param("x", f32({4}));
  ValueId w = d.op(Op::Where, {x3, x3}, f32({4}));
  d.ret({w});
  EXPECT_TRUE(reports(d.f, "where: 2 operands"));
}

TEST(Verifier, WrongResultCount) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::TopK, {x}, f32({2}));  // topk has two results
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "topk: 1 results"));
}

TEST(Verifier, NonBoolPredicate) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId p = b.ci32(1);
  ValueId y = b.op(Op::Neg, {x}, f32({4}), {}, p);
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "predicate is not bool[]"));
}

TEST(Verifier, NonScalarPredicate) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId m = b.param("m", boolean({4}));
  ValueId y = b.op(Op::Neg, {x}, f32({4}), {}, m);
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "predicate is not bool[]"));
}

TEST(Verifier, PredicatedSelect) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId c = b.param("c", boolean());
  ValueId y = b.op(Op::Select, {c, x, x}, f32({4}), {}, c);
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "select: may not be predicated"));
}

TEST(Verifier, PredicatedStateWriteAndLoop) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId c = b.param("c", boolean());
  b.effect(Op::StateWrite, {x}, named("s"), c);
  b.ret({x});
  EXPECT_TRUE(reports(b.f, "state_write: may not be predicated"));

  Builder d;
  ValueId x2 = d.param("x", f32({4}));
  ValueId c2 = d.param("c", boolean());
  auto h = d.begin_loop(c2, {x2}, 2);
  auto r = d.end_loop(h, c2, {h.params[0]});
  d.f.body.ops.back().pred = c2;
  d.ret({r[0]});
  EXPECT_TRUE(reports(d.f, "loop: may not be predicated"));
}

TEST(Verifier, SelectConditionAndOperandTypes) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId v = b.param("v", f32({3}));
  ValueId c = b.param("c", boolean({4}));
  ValueId y = b.op(Op::Select, {c, x, x}, f32({4}));
  ValueId z = b.op(Op::Select, {b.cbool(true), x, v}, f32({4}));
  b.ret({y, z});
  EXPECT_TRUE(reports(b.f, "select: condition is not bool[]"));
  EXPECT_TRUE(reports(b.f, "select: operand types differ"));
}

TEST(Verifier, LoopCarriedTypeMismatch) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  auto h = b.begin_loop(b.cbool(true), {x}, 2);
  ValueId wrong = b.op(Op::Sum, {h.params[0]}, f32(), axes({0}));  // f32[] yielded for an f32[4]
  b.end_loop(h, b.cbool(false), {wrong});
  b.ret({x});
  EXPECT_TRUE(reports(b.f, "carried value 0 changes type"));
}

TEST(Verifier, LoopCarriedCountMismatch) {
  // Too few yields.
  Builder b;
  ValueId x = b.param("x", f32({4}));
  auto h = b.begin_loop(b.cbool(true), {x, x}, 2);
  b.end_loop(h, b.cbool(false), {h.params[0]});
  b.ret({x});
  EXPECT_TRUE(reports(b.f, "loop: body yields do not match the carried values"));

  // A body parameter missing.
  Builder c;
  ValueId x2 = c.param("x", f32({4}));
  auto h2 = c.begin_loop(c.cbool(true), {x2, x2}, 2);
  auto r = c.end_loop(h2, c.cbool(false), {h2.params[0], h2.params[0]});
  c.f.body.ops.back().body->params.pop_back();
  c.ret({r[0]});
  EXPECT_TRUE(reports(c.f, "loop: body parameters do not match the carried values"));

  // A result missing.
  Builder d;
  ValueId x3 = d.param("x", f32({4}));
  auto h3 = d.begin_loop(d.cbool(true), {x3, x3}, 2);
  auto r3 = d.end_loop(h3, d.cbool(false), {h3.params[0], h3.params[1]});
  d.f.body.ops.back().results.pop_back();
  d.ret({r3[0]});
  EXPECT_TRUE(reports(d.f, "loop: results do not match the carried values"));
}

TEST(Verifier, NonBoolLoopConditions) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId n = b.param("n", i32());
  auto h = b.begin_loop(n, {x}, 2);
  auto r = b.end_loop(h, n, {h.params[0]});
  b.ret({r[0]});
  EXPECT_TRUE(reports(b.f, "loop: initial condition is not bool[]"));
  EXPECT_TRUE(reports(b.f, "loop: continue condition is not bool[]"));

  Builder c;
  ValueId x2 = c.param("x", f32({4}));
  ValueId m = c.param("m", boolean({4}));
  auto h2 = c.begin_loop(m, {x2}, 2);
  auto r2 = c.end_loop(h2, c.cbool(false), {h2.params[0]});
  c.ret({r2[0]});
  EXPECT_TRUE(reports(c.f, "loop: initial condition is not bool[]"));
}

TEST(Verifier, LoopYieldMustBeDefined) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId ghost = b.f.new_value(f32({4}));
  auto h = b.begin_loop(b.cbool(true), {x}, 2);
  auto r = b.end_loop(h, b.cbool(false), {ghost});
  b.ret({r[0]});
  EXPECT_TRUE(reports(b.f, "loop yield"));
}

// A value defined inside a nested loop's body is not visible to the enclosing body's yields.
TEST(Verifier, LoopYieldOfNestedBodyValue) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  auto outer = b.begin_loop(b.cbool(true), {x}, 2);
  auto inner = b.begin_loop(b.cbool(true), {outer.params[0]}, 2);
  ValueId hidden = b.op(Op::Neg, {inner.params[0]}, f32({4}));
  b.end_loop(inner, b.cbool(false), {hidden});
  auto r = b.end_loop(outer, b.cbool(false), {hidden});  // not in scope here
  b.ret({r[0]});
  EXPECT_TRUE(reports(b.f, "loop yield"));
}

TEST(Verifier, BodyOnNonLoopOp) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::Neg, {x}, f32({4}));
  b.f.body.ops.back().body = std::make_shared<Block>();
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "body present on a non-loop op or missing"));
}

TEST(Verifier, ResultTypeMismatch) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::Neg, {x}, f32({4}));
  b.f.body.yields = {y};
  b.f.result_types = {f16({4})};
  EXPECT_TRUE(reports(b.f, "result 0 has type f32[4], declared f16[4]"));

  Builder c;
  ValueId x2 = c.param("x", f32({Dim::sym("B")}));
  c.f.body.yields = {x2};
  c.f.result_types = {f32({Dim::sym("S")})};
  EXPECT_TRUE(reports(c.f, "result 0 has type f32[B], declared f32[S]"));
}

TEST(Verifier, ResultCountMismatch) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  b.f.body.yields = {x, x};
  b.f.result_types = {f32({4})};
  EXPECT_TRUE(reports(b.f, "returns a different number of results than declared"));
}

TEST(Verifier, ParameterTypeMismatch) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  b.f.params[0].type = f32({5});
  b.ret({x});
  EXPECT_TRUE(reports(b.f, "parameter x has a mismatched value type"));
}

TEST(Verifier, ValueDefinedTwice) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::Neg, {x}, f32({4}));
  Operation again;
  again.op = Op::Exp;
  again.operands = {x};
  again.results = {y};
  b.f.body.ops.push_back(again);
  b.ret({y});
  EXPECT_TRUE(reports(b.f, "defined twice"));
}

TEST(Verifier, ValueDefinedInTwoLoopBodies) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  auto h = b.begin_loop(b.cbool(true), {x}, 2);
  ValueId y = b.op(Op::Neg, {h.params[0]}, f32({4}));
  auto r = b.end_loop(h, b.cbool(false), {y});
  auto h2 = b.begin_loop(b.cbool(true), {r[0]}, 2);
  Operation again;
  again.op = Op::Exp;
  again.operands = {h2.params[0]};
  again.results = {y};
  b.f.body.ops.back().body->ops.push_back(again);
  auto r2 = b.end_loop(h2, b.cbool(false), {y});
  b.ret({r2[0]});
  EXPECT_TRUE(reports(b.f, "defined twice"));
}

TEST(Verifier, ParameterRedefinedByAnOp) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  Operation o;
  o.op = Op::Neg;
  o.operands = {x};
  o.results = {x};
  b.f.body.ops.push_back(o);
  b.ret({x});
  EXPECT_TRUE(reports(b.f, "defined twice"));
}

TEST(Verifier, VerifyOrThrowListsProblems) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.op(Op::Add, {x}, f32({4}));
  b.ret({y});
  try {
    verify_or_throw(b.f, "my pass");
    FAIL() << "no throw";
  } catch (const std::logic_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("'f'"), std::string::npos) << m;
    EXPECT_NE(m.find("after my pass"), std::string::npos) << m;
    EXPECT_NE(m.find("add: 1 operands"), std::string::npos) << m;
  }
}

// A loop op without even a condition operand must be reported, not crash the verifier.
TEST(Verifier, LoopWithoutOperands) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  Operation o;
  o.op = Op::Loop;
  o.body = std::make_shared<Block>();
  o.body->yields = {};
  b.f.body.ops.push_back(o);
  b.ret({x});
  // Run in a child process: a crash fails this test without taking the others down.
  EXPECT_EXIT(
      {
        bool ok = reports(b.f, "loop: 0 operands");
        std::exit(ok ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace grape::ir
