// Lowering of control flow to predicated IR (language.md, "Semantics of control flow").
#include <gtest/gtest.h>

#include "tests/frontend/frontend_test_util.h"

namespace grape::testing {
namespace {

using ir::Op;

const char* kEverything = R"(
const L = 2
weights { h[L] { w: f32[4] } }
fn main(x: f32[4], c: bool[], n: i32[]) -> f32[4] {
  var y = x
  if c { y = exp(y) } else if n > 2 { y = neg(y) } else { y = y * 2.0 }
  for i in 0..L { y = y + h[i].w }
  for i in 0..n {
    if i == 3 { continue }
    if sum(y) > 100.0 { break }
    y = y + 1.0
  }
  var t = 0
  while t < n max 8 {
    t = t + 1
    if t == 5 { break }
  }
  return y + cast(t, f32)
}
)";

TEST(ControlFlow, OnlyLoopOpsHaveBodies) {
  for (bool optimize : {false, true}) {
    auto c = compile(kEverything, {}, optimize);
    ASSERT_TRUE(c->ok()) << c->errors();
    const ir::Function& f = c->fn();
    EXPECT_TRUE(ir::verify(f).empty());
    int loops = 0;
    for (const auto* op : all_ops(f)) {
      EXPECT_EQ(op->body != nullptr, op->op == Op::Loop) << ir::op_name(op->op);
      loops += op->op == Op::Loop;
    }
    EXPECT_EQ(loops, 2) << c->ir();  // the for over 0..n and the while; 0..L is unrolled
  }
}

TEST(ControlFlow, IfBranchOpsArePredicatedAndMergedBySelect) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], c: bool[]) -> f32[4] {
  var y = x
  if c { y = exp(x) } else { y = neg(x) }
  return y
}
)");
  const ir::Function& f = c->fn();
  ir::ValueId cv = param_value(f, "c");
  auto exps = ops_of(f, Op::Exp);
  auto negs = ops_of(f, Op::Neg);
  ASSERT_EQ(exps.size(), 1u) << c->ir();
  ASSERT_EQ(negs.size(), 1u) << c->ir();
  EXPECT_EQ(exps[0]->pred, cv) << c->ir();
  // The else branch runs under `not c`.
  ASSERT_NE(negs[0]->pred, ir::kNoValue) << c->ir();
  const ir::Operation* p = def_of(f, negs[0]->pred);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->op, Op::Not);
  EXPECT_EQ(p->operands, std::vector<ir::ValueId>{cv});
  // The result is a select between the branches.
  EXPECT_EQ(ops_of(f, Op::Select).size(), 2u) << c->ir();
  const ir::Operation* r = def_of(f, f.body.yields[0]);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->op, Op::Select) << c->ir();
  EXPECT_EQ(r->operands[1], negs[0]->results[0]);
}

TEST(ControlFlow, NestedIfPredicatesCombineWithoutAnd) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], a: bool[], b: bool[]) -> f32[4] {
  var y = x
  if a {
    if b { y = exp(x) }
  }
  return y
}
)");
  const ir::Function& f = c->fn();
  auto exps = ops_of(f, Op::Exp);
  ASSERT_EQ(exps.size(), 1u);
  // The inner predicate is `a and b`, computed with a select (b may be undefined when a is false).
  const ir::Operation* p = def_of(f, exps[0]->pred);
  ASSERT_NE(p, nullptr) << c->ir();
  EXPECT_EQ(p->op, Op::Select) << c->ir();
  EXPECT_EQ(p->operands[0], param_value(f, "a"));
  EXPECT_EQ(p->operands[1], param_value(f, "b"));
}

TEST(ControlFlow, AssignmentInBranchBecomesSelect) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], c: bool[]) -> f32[4] {
  var y = x
  if c { y = y + 1.0 }
  return y
}
)");
  const ir::Function& f = c->fn();
  auto sels = ops_of(f, Op::Select);
  ASSERT_EQ(sels.size(), 1u) << c->ir();
  EXPECT_EQ(sels[0]->operands[0], param_value(f, "c"));
  EXPECT_EQ(sels[0]->operands[2], param_value(f, "x"));
  EXPECT_EQ(def_of(f, sels[0]->operands[1])->op, Op::Add);
  EXPECT_EQ(def_of(f, sels[0]->operands[1])->pred, param_value(f, "c"));
  EXPECT_EQ(f.body.yields[0], sels[0]->results[0]);
}

TEST(ControlFlow, StaticIfConditionPicksABranch) {
  COMPILE_OK(c, R"(
const D = 3
fn main(x: f32[4]) -> f32[4] {
  var y = x
  if D > 2 { y = exp(x) } else { y = neg(x) }
  return y
}
)");
  const ir::Function& f = c->fn();
  EXPECT_EQ(ops_of(f, Op::Exp).size(), 1u);
  EXPECT_EQ(ops_of(f, Op::Neg).size(), 0u);
  EXPECT_EQ(ops_of(f, Op::Select).size(), 0u);
  EXPECT_EQ(ops_of(f, Op::Exp)[0]->pred, ir::kNoValue);
}

TEST(ControlFlow, ForOverWeightGroupIsUnrolled) {
  COMPILE_OK(c, R"(
const L = 3
weights { h[L] { w: f32[4] } }
fn main(x: f32[4]) -> f32[4] {
  var y = x
  for i in 0..L { y = y * h[i].w }
  return y
}
)");
  const ir::Function& f = c->fn();
  EXPECT_TRUE(ops_of(f, Op::Loop).empty()) << c->ir();
  auto ws = ops_of(f, Op::Weight);
  ASSERT_EQ(ws.size(), 3u) << c->ir();
  EXPECT_EQ(ws[0]->attrs.name, "h.0.w");
  EXPECT_EQ(ws[1]->attrs.name, "h.1.w");
  EXPECT_EQ(ws[2]->attrs.name, "h.2.w");
  EXPECT_EQ(ops_of(f, Op::Mul).size(), 3u);
  ASSERT_EQ(c->module->weights.size(), 3u);
  EXPECT_EQ(c->module->weights[2].name, "h.2.w");
}

TEST(ControlFlow, UnrolledLoopWithIndexInAShape) {
  COMPILE_OK(c, R"(
fn main(x: f32[8]) -> f32[] {
  var s: f32[] = 0.0
  for i in 1..4 { s = s + sum(x[0:i]) }
  return s
}
)");
  const ir::Function& f = c->fn();
  EXPECT_TRUE(ops_of(f, Op::Loop).empty()) << c->ir();
  auto slices = ops_of(f, Op::Slice);
  ASSERT_EQ(slices.size(), 3u) << c->ir();
  EXPECT_TRUE(slices[2]->attrs.slices[0].size.is_const(3));
}

TEST(ControlFlow, ForOverDeviceBoundIsADeviceLoop) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var y = x
  for i in 0..n { y = y + 1.0 }
  return y
}
)");
  auto loops = ops_of(c->fn(), Op::Loop);
  ASSERT_EQ(loops.size(), 1u) << c->ir();
  EXPECT_EQ(loops[0]->attrs.max_trips, -1);
}

TEST(ControlFlow, StaticForNotNeedingACompileTimeIndexIsABoundedDeviceLoop) {
  COMPILE_OK(c, R"(
fn main(x: f32[4]) -> f32[4] {
  var y = x
  for i in 0..4 { y = y + cast(i, f32) }
  return y
}
)");
  auto loops = ops_of(c->fn(), Op::Loop);
  ASSERT_EQ(loops.size(), 1u) << c->ir();
  EXPECT_EQ(loops[0]->attrs.max_trips, 4);
  // The loop index is carried on the device: i32[] next to y.
  ASSERT_EQ(loops[0]->results.size(), 2u) << c->ir();
}

TEST(ControlFlow, WhileMaxBound) {
  COMPILE_OK(c, R"(
fn main(n: i32[]) -> i32[] {
  var t = 0
  while t < n max 8 { t = t + 1 }
  var u = 0
  while u < n { u = u + 2 }
  return t + u
}
)");
  auto loops = ops_of(c->fn(), Op::Loop);
  ASSERT_EQ(loops.size(), 2u) << c->ir();
  EXPECT_EQ(loops[0]->attrs.max_trips, 8);
  EXPECT_EQ(loops[1]->attrs.max_trips, -1);
}

TEST(ControlFlow, BreakAddsNotBrokenToTheCondition) {
  COMPILE_OK(c, R"(
fn main(n: i32[], stop: i32[]) -> i32[] {
  var t = 0
  while t < n max 8 {
    t = t + 1
    if t == stop { break }
  }
  return t
}
)");
  const ir::Function& f = c->fn();
  auto loops = ops_of(f, Op::Loop);
  ASSERT_EQ(loops.size(), 1u);
  const ir::Block& body = *loops[0]->body;
  const ir::Operation* cond = def_of(f, body.yields[0]);
  ASSERT_NE(cond, nullptr) << c->ir();
  ASSERT_EQ(cond->op, Op::And) << c->ir();
  const ir::Operation* lt = def_of(f, cond->operands[0]);
  const ir::Operation* nb = def_of(f, cond->operands[1]);
  ASSERT_TRUE(lt && nb) << c->ir();
  EXPECT_EQ(lt->op, Op::Lt) << c->ir();
  ASSERT_EQ(nb->op, Op::Not) << c->ir();
  // `broken` is the break's condition `t == stop`.
  const ir::Operation* broken = def_of(f, nb->operands[0]);
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->op, Op::Eq) << c->ir();
  EXPECT_EQ(broken->operands[1], param_value(f, "stop"));
}

TEST(ControlFlow, StatementsAfterBreakRunUnderNotBroken) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var y = x
  var t = 0
  while t < n max 8 {
    if t == 3 { break }
    y = exp(y)
    t = t + 1
  }
  return y
}
)");
  const ir::Function& f = c->fn();
  auto exps = ops_of(f, Op::Exp);
  ASSERT_EQ(exps.size(), 1u);
  const ir::Operation* p = def_of(f, exps[0]->pred);
  ASSERT_NE(p, nullptr) << c->ir();
  EXPECT_EQ(p->op, Op::Not) << c->ir();
  EXPECT_EQ(def_of(f, p->operands[0])->op, Op::Eq) << c->ir();
}

TEST(ControlFlow, ContinueDoesNotChangeTheLoopCondition) {
  COMPILE_OK(c, R"(
fn main(x: f32[4], n: i32[]) -> f32[4] {
  var y = x
  for i in 0..n {
    if i == 2 { continue }
    y = exp(y)
  }
  return y
}
)");
  const ir::Function& f = c->fn();
  auto loops = ops_of(f, Op::Loop);
  ASSERT_EQ(loops.size(), 1u);
  const ir::Operation* cond = def_of(f, loops[0]->body->yields[0]);
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->op, Op::Lt) << c->ir();
  auto exps = ops_of(f, Op::Exp);
  ASSERT_EQ(exps.size(), 1u);
  EXPECT_NE(exps[0]->pred, ir::kNoValue) << c->ir();
}

TEST(ControlFlow, StateAssignedInABranchIsWrittenOnceWithASelect) {
  COMPILE_OK(c, R"(
state count: i32[] = zeros
fn main(x: f32[4]) -> f32[4] {
  if sum(x) > 0.0 { count = count + 1 }
  return x
}
)");
  const ir::Function& f = c->fn();
  auto writes = ops_of(f, Op::StateWrite);
  ASSERT_EQ(writes.size(), 1u) << c->ir();
  EXPECT_EQ(writes[0]->pred, ir::kNoValue);
  EXPECT_EQ(def_of(f, writes[0]->operands[0])->op, Op::Select) << c->ir();
}

TEST(ControlFlow, UnchangedStateIsNotWritten) {
  COMPILE_OK(c, R"(
state count: i32[] = zeros
fn main(x: f32[4]) -> i32[] {
  return count
}
)");
  EXPECT_TRUE(ops_of(c->fn(), Op::StateWrite).empty()) << c->ir();
  EXPECT_EQ(ops_of(c->fn(), Op::StateRead).size(), 1u) << c->ir();
}

}  // namespace
}  // namespace grape::testing
