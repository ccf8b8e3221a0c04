// Hand-checked cases for take, take_along_axis, topk, one_hot and the creation ops.
#include "tests/kernels/kernel_test_util.h"

#include "base/half.h"

namespace grape::cpu::test {
namespace {

using ir::Op;

KernelAttrs axis(int64_t ax) {
  KernelAttrs a;
  a.axis = ax;
  return a;
}

TEST(Take, EmbeddingAndClamp) {
  Tensor emb = F({3, 2}, {0, 1, 10, 11, 20, 21});
  expect_vals(run1(Op::Take, {emb, I({2, 2}, {2, 0, -1, 5})}, axis(0)), DType::F32, {2, 2, 2},
              {20, 21, 0, 1, 20, 21, 20, 21});
  expect_vals(run1(Op::Take, {emb, L({1}, {-7})}, axis(1)), DType::F32, {3, 1}, {0, 10, 20});
  expect_vals(run1(Op::Take, {emb, I({}, {1})}, axis(0)), DType::F32, {2}, {10, 11});
  expect_vals(run1(Op::Take, {emb, I({0}, {})}, axis(0)), DType::F32, {0, 2}, {});
  EXPECT_THROW(run1(Op::Take, {emb, F({1}, {0})}, axis(0)), KernelError);
  EXPECT_THROW(run1(Op::Take, {emb, I({1}, {0})}, axis(2)), KernelError);
  EXPECT_THROW(run1(Op::Take, {F({0, 2}, {}), I({1}, {0})}, axis(0)), KernelError);
}

TEST(TakeAlongAxis, BroadcastsOtherDims) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_vals(run1(Op::TakeAlongAxis, {x, I({2, 1}, {2, 0})}, axis(1)), DType::F32, {2, 1}, {3, 4});
  expect_vals(run1(Op::TakeAlongAxis, {x, I({1, 2}, {-1, 9})}, axis(1)), DType::F32, {2, 2}, {3, 3, 6, 6});
  expect_vals(run1(Op::TakeAlongAxis, {x, I({1, 3}, {1, 0, 1})}, axis(0)), DType::F32, {1, 3}, {4, 2, 6});
  EXPECT_THROW(run1(Op::TakeAlongAxis, {x, I({3}, {0, 0, 0})}, axis(0)), KernelError);
  EXPECT_THROW(run1(Op::TakeAlongAxis, {x, I({3, 1}, {0, 0, 0})}, axis(1)), KernelError);
}

TEST(TopK, OrderTiesNan) {
  KernelAttrs a = axis(1);
  a.k = 3;
  auto r = run_kernel(Op::TopK, {F({2, 4}, {1, 3, 3, 2, 0, kNaN, 5, kNaN})}, a);
  ASSERT_EQ(r.size(), 2u);
  expect_vals(r[0], DType::F32, {2, 3}, {3, 3, 2, kNaN, kNaN, 5});
  expect_vals(r[1], DType::I32, {2, 3}, {1, 2, 3, 1, 3, 2});
  a.axis = 0;
  a.k = 1;
  r = run_kernel(Op::TopK, {I({3, 1}, {4, 9, 9})}, a);
  expect_vals(r[0], DType::I32, {1, 1}, {9});
  expect_vals(r[1], DType::I32, {1, 1}, {1});
  a.k = 4;
  EXPECT_THROW(run_kernel(Op::TopK, {I({3, 1}, {4, 9, 9})}, a), KernelError);
  a.k = 0;
  r = run_kernel(Op::TopK, {I({3, 1}, {4, 9, 9})}, a);
  EXPECT_EQ(r[0].shape(), (Shape{0, 1}));
}

TEST(OneHot, OutOfRangeRowIsZero) {
  KernelAttrs a;
  a.k = 3;
  a.dtype = DType::F16;
  Tensor r = run1(Op::OneHot, {I({4}, {0, 2, 3, -1})}, a);
  expect_vals(r, DType::F16, {4, 3}, {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0});
  a.dtype = DType::Bool;
  expect_vals(run1(Op::OneHot, {L({}, {1})}, a), DType::Bool, {3}, {0, 1, 0});
  EXPECT_THROW(run1(Op::OneHot, {F({1}, {0})}, a), KernelError);
}

TEST(Create, ConstantFullArange) {
  KernelAttrs a;
  a.dtype = DType::F32;
  a.value = 2.5;
  expect_vals(run1(Op::Constant, {}, a), DType::F32, {}, {2.5});
  a.dtype = DType::I64;
  a.ivalue = INT64_MAX;
  Tensor c = run1(Op::Constant, {}, a);
  EXPECT_EQ(c.get_int(0), INT64_MAX);
  a.dtype = DType::BF16;
  a.value = 1.0 / 3.0;
  a.shape = {2, 2};
  Tensor f = run1(Op::Full, {}, a);
  EXPECT_EQ(f.shape(), (Shape{2, 2}));
  EXPECT_EQ(f.data<uint16_t>()[3], f32_to_bf16(1.0f / 3.0f));
  a.dtype = DType::Bool;
  a.ivalue = 1;
  a.shape = {0};
  expect_vals(run1(Op::Full, {}, a), DType::Bool, {0}, {});
  a.dtype = DType::I32;
  a.shape = {4};
  expect_vals(run1(Op::Arange, {}, a), DType::I32, {4}, {0, 1, 2, 3});
  a.dtype = DType::F16;
  expect_vals(run1(Op::Arange, {}, a), DType::F16, {4}, {0, 1, 2, 3});
  a.shape = {2, 2};
  EXPECT_THROW(run1(Op::Arange, {}, a), KernelError);
}

TEST(Create, HalfFillRoundsOnce) {
  // 1 + 2^-11 + 2^-40 is just above the f16 tie 1 + 2^-11: correct rounding goes up, while
  // rounding through f32 first would land on the tie and round down to even.
  KernelAttrs a;
  a.dtype = DType::F16;
  a.value = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(run1(Op::Constant, {}, a).get(0), 1.0 + std::ldexp(1.0, -10));
}

TEST(Create, DimValue) {
  KernelAttrs a;
  a.shape = {7};
  expect_vals(run1(Op::DimValue, {}, a), DType::I32, {}, {7});
  a.shape = {int64_t{1} << 40};
  EXPECT_THROW(run1(Op::DimValue, {}, a), KernelError);
}

TEST(CausalMask, Offset) {
  KernelAttrs a;
  a.shape = {2, 4};
  expect_vals(run1(Op::CausalMask, {I({}, {1})}, a), DType::Bool, {2, 4}, {1, 1, 0, 0, 1, 1, 1, 0});
  expect_vals(run1(Op::CausalMask, {L({}, {0})}, a), DType::Bool, {2, 4}, {1, 0, 0, 0, 1, 1, 0, 0});
  EXPECT_THROW(run1(Op::CausalMask, {I({1}, {0})}, a), KernelError);
  EXPECT_THROW(run1(Op::CausalMask, {F({}, {0})}, a), KernelError);
}

}  // namespace
}  // namespace grape::cpu::test
