// Constant folding: exact op lists after the pass. Folded ops become `constant` in place; the
// operands they no longer use are left for DCE.
#include "ir/passes/const_fold.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/verifier.h"
#include "tests/ir/ir_builder.h"

namespace grape::ir {
namespace {

using namespace grape::ir::testing;

bool fold(Function& f) {
  bool changed = fold_constants(f);
  auto problems = verify(f);
  EXPECT_TRUE(problems.empty()) << problems.front() << "\n" << print_function(f);
  return changed;
}

TEST(ConstFold, I32Arithmetic) {
  Builder b;
  ValueId two = b.ci32(2), three = b.ci32(3);
  ValueId s = b.op(Op::Add, {two, three}, i32());
  ValueId d = b.op(Op::Sub, {two, three}, i32());
  ValueId m = b.op(Op::Mul, {s, d}, i32());  // chained: (2+3)*(2-3)
  ValueId n = b.op(Op::Neg, {m}, i32());
  b.ret({s, d, m, n});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (i32[], i32[], i32[], i32[]) {\n"
            "  %0 = constant {i32, value=2} : i32[]\n"
            "  %1 = constant {i32, value=3} : i32[]\n"
            "  %2 = constant {i32, value=5} : i32[]\n"
            "  %3 = constant {i32, value=-1} : i32[]\n"
            "  %4 = constant {i32, value=-5} : i32[]\n"
            "  %5 = constant {i32, value=5} : i32[]\n"
            "  return %2, %3, %4, %5\n"
            "}\n");
  EXPECT_FALSE(fold(b.f));  // nothing left
}

TEST(ConstFold, I32Comparisons) {
  Builder b;
  ValueId two = b.ci32(2), three = b.ci32(3);
  std::vector<ValueId> r;
  for (Op o : {Op::Eq, Op::Ne, Op::Lt, Op::Le, Op::Gt, Op::Ge}) r.push_back(b.op(o, {two, three}, boolean()));
  r.push_back(b.op(Op::Le, {three, three}, boolean()));
  b.ret(r);
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (bool[], bool[], bool[], bool[], bool[], bool[], bool[]) {\n"
            "  %0 = constant {i32, value=2} : i32[]\n"
            "  %1 = constant {i32, value=3} : i32[]\n"
            "  %2 = constant {bool, value=0} : bool[]\n"
            "  %3 = constant {bool, value=1} : bool[]\n"
            "  %4 = constant {bool, value=1} : bool[]\n"
            "  %5 = constant {bool, value=1} : bool[]\n"
            "  %6 = constant {bool, value=0} : bool[]\n"
            "  %7 = constant {bool, value=0} : bool[]\n"
            "  %8 = constant {bool, value=1} : bool[]\n"
            "  return %2, %3, %4, %5, %6, %7, %8\n"
            "}\n");
}

TEST(ConstFold, I32OverflowIsNotFolded) {
  Builder b;
  ValueId big = b.ci32(2147483647), one = b.ci32(1);
  ValueId s = b.op(Op::Add, {big, one}, i32());
  b.ret({s});
  EXPECT_FALSE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (i32[]) {\n"
            "  %0 = constant {i32, value=2147483647} : i32[]\n"
            "  %1 = constant {i32, value=1} : i32[]\n"
            "  %2 = add %0, %1 : i32[]\n"
            "  return %2\n"
            "}\n");
}

TEST(ConstFold, F32ArithmeticAndComparison) {
  Builder b;
  ValueId a = b.cf32(1.5), c = b.cf32(2.25);
  ValueId s = b.op(Op::Add, {a, c}, f32());
  ValueId d = b.op(Op::Sub, {a, c}, f32());
  ValueId m = b.op(Op::Mul, {a, c}, f32());
  ValueId n = b.op(Op::Neg, {a}, f32());
  ValueId lt = b.op(Op::Lt, {a, c}, boolean());
  ValueId eq = b.op(Op::Eq, {s, b.cf32(3.75)}, boolean());
  b.ret({s, d, m, n, lt, eq});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (f32[], f32[], f32[], f32[], bool[], bool[]) {\n"
            "  %0 = constant {f32, value=1.5} : f32[]\n"
            "  %1 = constant {f32, value=2.25} : f32[]\n"
            "  %2 = constant {f32, value=3.75} : f32[]\n"
            "  %3 = constant {f32, value=-0.75} : f32[]\n"
            "  %4 = constant {f32, value=3.375} : f32[]\n"
            "  %5 = constant {f32, value=-1.5} : f32[]\n"
            "  %6 = constant {bool, value=1} : bool[]\n"
            "  %7 = constant {f32, value=3.75} : f32[]\n"
            "  %8 = constant {bool, value=1} : bool[]\n"
            "  return %2, %3, %4, %5, %6, %8\n"
            "}\n");
}

// Folding must give what the f32 program computes: the operands are f32 values, so a constant
// written as 16777217 is 16777216 in f32, and 16777217 - 16777216 is 0, not 1.
TEST(ConstFold, F32OperandsAreF32Values) {
  Builder b;
  ValueId a = b.cf32(16777217.0), c = b.cf32(16777216.0);
  ValueId d = b.op(Op::Sub, {a, c}, f32());
  ValueId eq = b.op(Op::Eq, {a, c}, boolean());
  b.ret({d, eq});
  fold(b.f);
  std::string out = b.print();
  EXPECT_EQ(out.find("%2 = constant {f32, value=1}"), std::string::npos) << out;
  EXPECT_EQ(out.find("%3 = constant {bool, value=0}"), std::string::npos) << out;
}

TEST(ConstFold, F32ResultIsRoundedToF32) {
  Builder b;
  ValueId a = b.cf32(0.5), c = b.cf32(1.0 / 1024 / 1024 / 1024);  // 2^-30
  ValueId s = b.op(Op::Add, {a, c}, f32());                       // 0.5 + 2^-30 rounds to 0.5 in f32
  b.ret({s});
  EXPECT_TRUE(fold(b.f));
  EXPECT_NE(b.print().find("%2 = constant {f32, value=0.5} : f32[]"), std::string::npos) << b.print();
}

// `true and false` and `true or false` also match the and/or identities, so their uses are
// redirected to the existing constants.
TEST(ConstFold, BoolLogic) {
  Builder b;
  ValueId t = b.cbool(true), f = b.cbool(false);
  ValueId a = b.op(Op::And, {t, f}, boolean());
  ValueId o = b.op(Op::Or, {t, f}, boolean());
  ValueId n = b.op(Op::Not, {f}, boolean());
  ValueId e = b.op(Op::Eq, {t, t}, boolean());
  b.ret({a, o, n, e});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (bool[], bool[], bool[], bool[]) {\n"
            "  %0 = constant {bool, value=1} : bool[]\n"
            "  %1 = constant {bool, value=0} : bool[]\n"
            "  %2 = constant {bool, value=0} : bool[]\n"
            "  %3 = constant {bool, value=1} : bool[]\n"
            "  %4 = constant {bool, value=1} : bool[]\n"
            "  %5 = constant {bool, value=1} : bool[]\n"
            "  return %1, %0, %4, %5\n"
            "}\n");
}

TEST(ConstFold, SelectWithConstantCondition) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.param("y", f32({4}));
  ValueId s1 = b.op(Op::Select, {b.cbool(true), x, y}, f32({4}));
  ValueId s2 = b.op(Op::Select, {b.cbool(false), x, y}, f32({4}));
  ValueId sum = b.op(Op::Add, {s1, s2}, f32({4}));
  b.ret({sum});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: f32[4], %1 y: f32[4]) -> (f32[4]) {\n"
            "  %2 = constant {bool, value=1} : bool[]\n"
            "  %3 = select %2, %0, %1 : f32[4]\n"
            "  %4 = constant {bool, value=0} : bool[]\n"
            "  %5 = select %4, %0, %1 : f32[4]\n"
            "  %6 = add %0, %1 : f32[4]\n"
            "  return %6\n"
            "}\n");
}

TEST(ConstFold, SelectWithDeviceConditionStays) {
  Builder b;
  ValueId x = b.param("x", f32({4}));
  ValueId y = b.param("y", f32({4}));
  ValueId c = b.param("c", boolean());
  ValueId s = b.op(Op::Select, {c, x, y}, f32({4}));
  b.ret({s});
  EXPECT_FALSE(fold(b.f));
}

TEST(ConstFold, AndOrWithAConstant) {
  Builder b;
  ValueId c = b.param("c", boolean());
  ValueId t = b.cbool(true), f = b.cbool(false);
  ValueId a1 = b.op(Op::And, {c, t}, boolean());  // c
  ValueId a2 = b.op(Op::And, {t, c}, boolean());  // c
  ValueId o1 = b.op(Op::Or, {c, f}, boolean());   // c
  ValueId a3 = b.op(Op::And, {c, f}, boolean());  // not an identity: stays
  b.ret({a1, a2, o1, a3});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 c: bool[]) -> (bool[], bool[], bool[], bool[]) {\n"
            "  %1 = constant {bool, value=1} : bool[]\n"
            "  %2 = constant {bool, value=0} : bool[]\n"
            "  %3 = and %0, %1 : bool[]\n"
            "  %4 = and %1, %0 : bool[]\n"
            "  %5 = or %0, %2 : bool[]\n"
            "  %6 = and %0, %2 : bool[]\n"
            "  return %0, %0, %0, %6\n"
            "}\n");
}

// `m and true` with m: bool[4] is bool[4], but `true and c`'s other side must have the result's
// type for the identity to apply: bool[] `and` bool[4] -> bool[4] is not replaced by the scalar.
TEST(ConstFold, AndIdentityRespectsBroadcasting) {
  Builder b;
  ValueId c = b.param("c", boolean());
  ValueId t = b.op(Op::Full, {}, boolean({4}), [] {
    Attrs a;
    a.dtype = DType::Bool;
    a.ivalue = 1;
    a.shape = {4};
    return a;
  }());
  ValueId tr = b.cbool(true);
  ValueId a = b.op(Op::And, {c, t}, boolean({4}));  // t is not a constant op: stays
  ValueId a2 = b.op(Op::And, {tr, c}, boolean());   // c
  ValueId m = b.param("m", boolean({4}));
  ValueId a3 = b.op(Op::And, {m, tr}, boolean({4}));  // m
  b.ret({a, a2, a3});
  EXPECT_TRUE(fold(b.f));
  EXPECT_NE(b.print().find("return %4, %0, %1\n"), std::string::npos) << b.print();
}

TEST(ConstFold, F16IsLeftAlone) {
  Builder b;
  ValueId a = b.cf16(1.5), c = b.cf16(2.25);
  ValueId s = b.op(Op::Add, {a, c}, f16());
  ValueId m = b.op(Op::Mul, {a, c}, f16());
  ValueId n = b.op(Op::Neg, {a}, f16());
  b.ret({s, m, n});
  EXPECT_FALSE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f() -> (f16[], f16[], f16[]) {\n"
            "  %0 = constant {f16, value=1.5} : f16[]\n"
            "  %1 = constant {f16, value=2.25} : f16[]\n"
            "  %2 = add %0, %1 : f16[]\n"
            "  %3 = mul %0, %1 : f16[]\n"
            "  %4 = neg %0 : f16[]\n"
            "  return %2, %3, %4\n"
            "}\n");
}

// f16 constants 2049 and 2048 are the same f16 value (2048); a comparison folded on the
// unrounded attribute values would say they differ.
TEST(ConstFold, F16ComparisonUsesF16Values) {
  Builder b;
  ValueId a = b.cf16(2049), c = b.cf16(2048);
  ValueId eq = b.op(Op::Eq, {a, c}, boolean());
  b.ret({eq});
  fold(b.f);
  EXPECT_EQ(b.print().find("%2 = constant {bool, value=0}"), std::string::npos) << b.print();
}

// Casts to float types and square roots of constants fold to the value the backends compute: in
// f32, then rounded to the result's type. Expected values worked out by hand: 1 / sqrt(768) =
// 0.0360843918..., which is 1182.4 units of 2^-15 (f16's spacing in [2^-5, 2^-4)), so f16 holds
// 1182 * 2^-15; the f16 literal 2049 is 2048 in f16.
TEST(ConstFold, CastsAndSquareRootsFoldToRoundedValues) {
  Builder b;
  Attrs to_f16, to_f32;
  to_f16.dtype = DType::F16;
  to_f32.dtype = DType::F32;
  ValueId c64 = b.op(Op::Cast, {b.ci32(64)}, f16(), to_f16);
  ValueId scale64 = b.op(Op::Rsqrt, {c64}, f16());
  ValueId c768 = b.op(Op::Cast, {b.ci32(768)}, f16(), to_f16);
  ValueId scale768 = b.op(Op::Rsqrt, {c768}, f16());
  ValueId wide = b.op(Op::Cast, {b.cf16(2049)}, f32(), to_f32);
  ValueId root = b.op(Op::Sqrt, {b.cf32(2.0)}, f32());
  ValueId mixed = b.op(Op::Rsqrt, {b.cf32(4.0)}, f16());  // operand and result types differ: left
  b.ret({scale64, scale768, wide, root, mixed});
  EXPECT_TRUE(fold(b.f));
  auto value_of = [&](ValueId v) -> const Operation* {
    for (const Operation& op : b.f.body.ops)
      if (!op.results.empty() && op.results[0] == v) return &op;
    return nullptr;
  };
  for (ValueId v : {scale64, scale768, wide, root}) ASSERT_EQ(value_of(v)->op, Op::Constant) << b.print();
  EXPECT_EQ(value_of(scale64)->attrs.dtype, DType::F16);
  EXPECT_EQ(value_of(scale64)->attrs.fvalue, 0.125);
  EXPECT_EQ(value_of(scale768)->attrs.fvalue, 1182.0 / 32768.0);
  EXPECT_EQ(value_of(wide)->attrs.fvalue, 2048.0);
  EXPECT_EQ(value_of(root)->attrs.fvalue, static_cast<double>(std::sqrt(2.0f)));
  EXPECT_EQ(value_of(mixed)->op, Op::Rsqrt);
}

TEST(ConstFold, PredicatedOpsAreNotFolded) {
  Builder b;
  ValueId p = b.param("p", boolean());
  ValueId two = b.ci32(2);
  ValueId s = b.op(Op::Add, {two, two}, i32(), {}, p);
  ValueId a = b.op(Op::And, {p, b.cbool(true)}, boolean(), {}, p);
  b.ret({s, a});
  EXPECT_FALSE(fold(b.f));
}

TEST(ConstFold, FoldsInsideLoopBodies) {
  Builder b;
  ValueId x = b.param("x", i32());
  ValueId go = b.param("go", boolean());
  ValueId k = b.ci32(4);
  auto h = b.begin_loop(go, {x}, 2);
  ValueId k2 = b.op(Op::Mul, {k, b.ci32(2)}, i32());
  ValueId y = b.op(Op::Add, {h.params[0], k2}, i32());
  ValueId c = b.op(Op::And, {go, b.cbool(true)}, boolean());
  auto r = b.end_loop(h, c, {y});
  b.ret({r[0]});
  EXPECT_TRUE(fold(b.f));
  EXPECT_EQ(b.print(),
            "func @f(%0 x: i32[], %1 go: bool[]) -> (i32[]) {\n"
            "  %2 = constant {i32, value=4} : i32[]\n"
            "  %3 = loop %1, %0 {max=2} : i32[] {\n"
            "  ^(%4):\n"
            "    %5 = constant {i32, value=2} : i32[]\n"
            "    %6 = constant {i32, value=8} : i32[]\n"
            "    %7 = add %4, %6 : i32[]\n"
            "    %8 = constant {bool, value=1} : bool[]\n"
            "    %9 = and %1, %8 : bool[]\n"
            "    yield %1, %7\n"
            "  }\n"
            "  return %3\n"
            "}\n");
}

}  // namespace
}  // namespace grape::ir
