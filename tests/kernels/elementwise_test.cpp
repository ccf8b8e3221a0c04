// Hand-checked cases for the elementwise kernels: unary math, cast, binary ops, where.
#include "tests/kernels/kernel_test_util.h"

#include "base/half.h"

namespace grape::cpu::test {
namespace {

using ir::Op;

TEST(Unary, FloatMath) {
  Tensor x = F({4}, {-1.5, 0, 2, 0.25});
  expect_vals(run1(Op::Neg, {x}), DType::F32, {4}, {1.5, -0, -2, -0.25});
  expect_vals(run1(Op::Abs, {x}), DType::F32, {4}, {1.5, 0, 2, 0.25});
  expect_vals(run1(Op::Relu, {x}), DType::F32, {4}, {0, 0, 2, 0.25});
  expect_near(run1(Op::Exp, {x}), {4}, {std::exp(-1.5), 1, std::exp(2.0), std::exp(0.25)});
  expect_near(run1(Op::Sigmoid, {x}), {4}, {1 / (1 + std::exp(1.5)), 0.5, 1 / (1 + std::exp(-2.0)), 1 / (1 + std::exp(-0.25))});
  expect_near(run1(Op::Silu, {x}), {4}, {-1.5 / (1 + std::exp(1.5)), 0, 2 / (1 + std::exp(-2.0)), 0.25 / (1 + std::exp(-0.25))});
  expect_near(run1(Op::Tanh, {x}), {4}, {std::tanh(-1.5), 0, std::tanh(2.0), std::tanh(0.25)});
  expect_vals(run1(Op::Floor, {x}), DType::F32, {4}, {-2, 0, 2, 0});
  expect_vals(run1(Op::Ceil, {x}), DType::F32, {4}, {-1, 0, 2, 1});
  expect_vals(run1(Op::Sign, {x}), DType::F32, {4}, {-1, 0, 1, 1});
  Tensor p = F({3}, {4, 0, 0.25});
  expect_vals(run1(Op::Sqrt, {p}), DType::F32, {3}, {2, 0, 0.5});
  expect_vals(run1(Op::Rsqrt, {p}), DType::F32, {3}, {0.5, kInf, 2});
  expect_vals(run1(Op::Log, {F({3}, {1, 0, -1})}), DType::F32, {3}, {0, -kInf, kNaN});
  expect_near(run1(Op::Sin, {F({2}, {0, M_PI / 2})}), {2}, {0, 1});
  expect_near(run1(Op::Cos, {F({2}, {0, M_PI})}), {2}, {1, -1});
}

TEST(Unary, RoundHalfToEven) {
  expect_vals(run1(Op::Round, {F({8}, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4, -2.6})}), DType::F32, {8},
              {0, 2, 2, -0, -2, -2, 2, -3});
}

TEST(Unary, NanHandling) {
  Tensor x = F({2}, {kNaN, -0.0});
  expect_vals(run1(Op::Sign, {x}), DType::F32, {2}, {kNaN, 0});
  expect_vals(run1(Op::Relu, {x}), DType::F32, {2}, {kNaN, 0});
  expect_vals(run1(Op::IsNan, {x}), DType::Bool, {2}, {1, 0});
  expect_vals(run1(Op::IsNan, {I({2}, {1, 2})}), DType::Bool, {2}, {0, 0});
}

TEST(Unary, Gelu) {
  Tensor x = F({3}, {-1, 0, 2});
  auto exact = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  auto approx = [](double v) { return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))); };
  expect_near(run1(Op::Gelu, {x}), {3}, {exact(-1), 0, exact(2)});
  KernelAttrs a;
  a.approx_tanh = true;
  expect_near(run1(Op::Gelu, {x}, a), {3}, {approx(-1), 0, approx(2)});
  // Far negative inputs keep relative accuracy (no 1 + erf cancellation).
  Tensor far = run1(Op::Gelu, {F({1}, {-6})});
  EXPECT_NEAR(far.get(0) / exact(-6), 1.0, 1e-4);
}

TEST(Unary, Ints) {
  Tensor x = I({4}, {-3, 0, 5, INT32_MIN});
  expect_vals(run1(Op::Neg, {x}), DType::I32, {4}, {3, 0, -5, INT32_MIN});  // wraps
  expect_vals(run1(Op::Abs, {x}), DType::I32, {4}, {3, 0, 5, INT32_MIN});
  expect_vals(run1(Op::Sign, {x}), DType::I32, {4}, {-1, 0, 1, -1});
  EXPECT_THROW(run1(Op::Exp, {x}), KernelError);
  EXPECT_THROW(run1(Op::Neg, {B({1}, {1})}), KernelError);
}

TEST(Unary, Not) {
  expect_vals(run1(Op::Not, {B({2}, {1, 0})}), DType::Bool, {2}, {0, 1});
  EXPECT_THROW(run1(Op::Not, {F({1}, {1})}), KernelError);
}

TEST(Unary, HalfRoundedOnStore) {
  Tensor x = T(DType::F16, {2}, {1.0, 3.0});
  Tensor r = run1(Op::Sqrt, {x});
  EXPECT_EQ(r.dtype(), DType::F16);
  EXPECT_EQ(r.data<uint16_t>()[0], f32_to_f16(1.0f));
  EXPECT_EQ(r.data<uint16_t>()[1], f32_to_f16(std::sqrt(3.0f)));
  Tensor b = T(DType::BF16, {1}, {3.0});
  EXPECT_EQ(run1(Op::Sqrt, {b}).data<uint16_t>()[0], f32_to_bf16(std::sqrt(3.0f)));
}

TEST(Unary, RankZeroAndEmpty) {
  expect_vals(run1(Op::Neg, {F({}, {2})}), DType::F32, {}, {-2});
  expect_vals(run1(Op::Exp, {F({0, 3}, {})}), DType::F32, {0, 3}, {});
}

TEST(Cast, Conversions) {
  KernelAttrs a;
  a.dtype = DType::I32;
  expect_vals(run1(Op::Cast, {F({6}, {2.7, -2.7, kNaN, 1e20, -1e20, -0.5})}, a), DType::I32, {6},
              {2, -2, 0, INT32_MAX, INT32_MIN, 0});
  a.dtype = DType::Bool;
  expect_vals(run1(Op::Cast, {F({3}, {0, -0.0, 0.1})}, a), DType::Bool, {3}, {0, 0, 1});
  expect_vals(run1(Op::Cast, {I({3}, {0, 7, -1})}, a), DType::Bool, {3}, {0, 1, 1});
  a.dtype = DType::F32;
  expect_vals(run1(Op::Cast, {B({2}, {1, 0})}, a), DType::F32, {2}, {1, 0});
  a.dtype = DType::I32;
  expect_vals(run1(Op::Cast, {L({2}, {(int64_t{1} << 32) + 5, -1})}, a), DType::I32, {2}, {5, -1});  // wraps
  a.dtype = DType::F16;
  Tensor h = run1(Op::Cast, {F({2}, {1.0 + 1.0 / 4096, 70000})}, a);
  expect_vals(h, DType::F16, {2}, {1.0, kInf});
  a.dtype = DType::BF16;
  expect_vals(run1(Op::Cast, {T(DType::F16, {1}, {3.0})}, a), DType::BF16, {1}, {3.0});
  a.dtype = DType::I64;
  expect_vals(run1(Op::Cast, {T(DType::BF16, {1}, {-3.5})}, a), DType::I64, {1}, {-3});
}

TEST(Binary, ArithmeticAndBroadcast) {
  Tensor a = F({2, 1}, {1, 2});
  Tensor b = F({3}, {10, 20, 30});
  expect_vals(run1(Op::Add, {a, b}), DType::F32, {2, 3}, {11, 21, 31, 12, 22, 32});
  expect_vals(run1(Op::Sub, {a, b}), DType::F32, {2, 3}, {-9, -19, -29, -8, -18, -28});
  expect_vals(run1(Op::Mul, {a, b}), DType::F32, {2, 3}, {10, 20, 30, 20, 40, 60});
  expect_vals(run1(Op::Div, {F({2}, {1, -1}), F({}, {0})}), DType::F32, {2}, {kInf, -kInf});
  expect_vals(run1(Op::Pow, {F({2}, {2, 4}), F({2}, {3, 0.5})}), DType::F32, {2}, {8, 2});
  expect_vals(run1(Op::Add, {F({}, {1}), F({}, {2})}), DType::F32, {}, {3});
  expect_vals(run1(Op::Add, {F({0, 2}, {}), F({2}, {1, 2})}), DType::F32, {0, 2}, {});
  EXPECT_THROW(run1(Op::Add, {F({2}, {1, 2}), F({3}, {1, 2, 3})}), KernelError);
  EXPECT_THROW(run1(Op::Add, {F({1}, {1}), I({1}, {1})}), KernelError);
  EXPECT_THROW(run1(Op::Add, {B({1}, {1}), B({1}, {1})}), KernelError);
}

TEST(Binary, FloatModIsPythons) {
  expect_vals(run1(Op::Mod, {F({5}, {7, -7, 7, -7, 1}), F({5}, {3, 3, -3, -3, 0})}), DType::F32, {5},
              {1, 2, -2, -1, kNaN});
  expect_vals(run1(Op::Mod, {F({1}, {5.5}), F({1}, {2})}), DType::F32, {1}, {1.5});
}

TEST(Binary, IntFloorDivModByZero) {
  Tensor a = I({6}, {7, -7, 7, -7, 5, INT32_MIN});
  Tensor b = I({6}, {2, 2, -2, -2, 0, -1});
  expect_vals(run1(Op::Div, {a, b}), DType::I32, {6}, {3, -4, -4, 3, 0, INT32_MIN});
  expect_vals(run1(Op::Mod, {a, b}), DType::I32, {6}, {1, 1, -1, -1, 0, 0});
  Tensor c = L({2}, {INT64_MIN, 9}), d = L({2}, {-1, 0});
  EXPECT_EQ(run1(Op::Div, {c, d}).get_int(0), INT64_MIN);
  EXPECT_EQ(run1(Op::Div, {c, d}).get_int(1), 0);
  EXPECT_EQ(run1(Op::Mod, {c, d}).get_int(0), 0);
}

TEST(Binary, IntPow) {
  Tensor b = I({7}, {2, 3, 1, -1, -1, 2, 0});
  Tensor e = I({7}, {10, 0, -5, -3, -4, -1, 0});
  expect_vals(run1(Op::Pow, {b, e}), DType::I32, {7}, {1024, 1, 1, -1, 1, 0, 1});
  expect_vals(run1(Op::Pow, {I({1}, {-2}), I({1}, {3})}), DType::I32, {1}, {-8});
}

TEST(Binary, MaxMinPropagateNan) {
  Tensor a = F({3}, {1, kNaN, 3}), b = F({3}, {2, 0, kNaN});
  expect_vals(run1(Op::Maximum, {a, b}), DType::F32, {3}, {2, kNaN, kNaN});
  expect_vals(run1(Op::Minimum, {a, b}), DType::F32, {3}, {1, kNaN, kNaN});
  expect_vals(run1(Op::Maximum, {I({2}, {-1, 5}), I({2}, {3, 2})}), DType::I32, {2}, {3, 5});
}

TEST(Binary, Comparisons) {
  Tensor a = F({4}, {1, 2, 3, kNaN}), b = F({}, {2});
  expect_vals(run1(Op::Eq, {a, b}), DType::Bool, {4}, {0, 1, 0, 0});
  expect_vals(run1(Op::Ne, {a, b}), DType::Bool, {4}, {1, 0, 1, 1});
  expect_vals(run1(Op::Lt, {a, b}), DType::Bool, {4}, {1, 0, 0, 0});
  expect_vals(run1(Op::Le, {a, b}), DType::Bool, {4}, {1, 1, 0, 0});
  expect_vals(run1(Op::Gt, {a, b}), DType::Bool, {4}, {0, 0, 1, 0});
  expect_vals(run1(Op::Ge, {a, b}), DType::Bool, {4}, {0, 1, 1, 0});
  expect_vals(run1(Op::Lt, {L({2}, {INT64_MAX - 1, 3}), L({2}, {INT64_MAX, 3})}), DType::Bool, {2}, {1, 0});
  expect_vals(run1(Op::Eq, {B({2}, {1, 0}), B({2}, {1, 1})}), DType::Bool, {2}, {1, 0});
}

TEST(Binary, Logic) {
  Tensor a = B({4}, {0, 0, 1, 1}), b = B({4}, {0, 1, 0, 1});
  expect_vals(run1(Op::And, {a, b}), DType::Bool, {4}, {0, 0, 0, 1});
  expect_vals(run1(Op::Or, {a, b}), DType::Bool, {4}, {0, 1, 1, 1});
  EXPECT_THROW(run1(Op::And, {I({1}, {1}), I({1}, {1})}), KernelError);
}

TEST(Binary, HalfComputedInF32) {
  // 2049 is not representable in f16; 1 + 2048 rounds to even (2048).
  Tensor a = T(DType::F16, {1}, {2048}), b = T(DType::F16, {1}, {1});
  expect_vals(run1(Op::Add, {a, b}), DType::F16, {1}, {2048});
  Tensor c = T(DType::BF16, {1}, {1}), d = T(DType::BF16, {1}, {3});
  EXPECT_EQ(run1(Op::Div, {c, d}).data<uint16_t>()[0], f32_to_bf16(1.0f / 3.0f));
}

TEST(Where, ThreeWayBroadcast) {
  Tensor c = B({2, 1}, {1, 0});
  Tensor a = I({3}, {1, 2, 3});
  Tensor b = I({}, {-1});
  expect_vals(run1(Op::Where, {c, a, b}), DType::I32, {2, 3}, {1, 2, 3, -1, -1, -1});
  EXPECT_THROW(run1(Op::Where, {I({1}, {1}), a, a}), KernelError);
  EXPECT_THROW(run1(Op::Where, {c, a, F({}, {1})}), KernelError);
}

TEST(Dispatch, ArityAndExecutorOps) {
  EXPECT_THROW(run_kernel(Op::Add, {F({1}, {1})}, {}), KernelError);
  EXPECT_THROW(run_kernel(Op::Neg, {}, {}), KernelError);
  for (Op op : {Op::Param, Op::Weight, Op::StateRead, Op::Select, Op::Loop}) {
    std::vector<Tensor> in;
    for (int i = 0; i < ir::op_info(op).min_operands; ++i) in.push_back(F({}, {1}));
    EXPECT_THROW(run_kernel(op, in, {}), KernelError) << ir::op_name(op);
  }
  EXPECT_THROW(run_kernel(Op::StateWrite, {F({}, {1})}, {}), KernelError);
  try {
    run_kernel(Op::Add, {F({1}, {1})}, {});
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "add: expected 2 operands, got 1");
  }
}

TEST(BroadcastShapes, Rules) {
  EXPECT_EQ(broadcast_shapes({2, 1, 3}, {4, 1}), (Shape{2, 4, 3}));
  EXPECT_EQ(broadcast_shapes({}, {5}), (Shape{5}));
  EXPECT_EQ(broadcast_shapes({0}, {1}), (Shape{0}));
  EXPECT_THROW(broadcast_shapes({2}, {3}), KernelError);
}

}  // namespace
}  // namespace grape::cpu::test
