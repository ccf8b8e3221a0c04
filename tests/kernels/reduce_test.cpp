// Hand-checked cases for reductions, argmax/argmin and cumsum.
#include "tests/kernels/kernel_test_util.h"

namespace grape::cpu::test {
namespace {

using ir::Op;

KernelAttrs axes(std::vector<int64_t> ax, bool keep = false) {
  KernelAttrs a;
  a.axes = std::move(ax);
  a.keepdims = keep;
  return a;
}

KernelAttrs axis(int64_t ax, bool keep = false) {
  KernelAttrs a;
  a.axis = ax;
  a.keepdims = keep;
  return a;
}

TEST(Reduce, SumMeanProdOverAxes) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_vals(run1(Op::Sum, {x}, axes({1})), DType::F32, {2}, {6, 15});
  expect_vals(run1(Op::Sum, {x}, axes({0})), DType::F32, {3}, {5, 7, 9});
  expect_vals(run1(Op::Sum, {x}, axes({0, 1})), DType::F32, {}, {21});
  expect_vals(run1(Op::Sum, {x}, axes({0, 1}, true)), DType::F32, {1, 1}, {21});
  expect_vals(run1(Op::Mean, {x}, axes({1}, true)), DType::F32, {2, 1}, {2, 5});
  expect_vals(run1(Op::Prod, {x}, axes({0})), DType::F32, {3}, {4, 10, 18});
  expect_vals(run1(Op::Sum, {x}, axes({})), DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y = F({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  expect_vals(run1(Op::Sum, {y}, axes({0, 2})), DType::F32, {2}, {1 + 2 + 5 + 6, 3 + 4 + 7 + 8});
}

TEST(Reduce, IntsKeepDtype) {
  Tensor x = I({3}, {INT32_MAX, 1, -4});
  expect_vals(run1(Op::Sum, {x}, axes({0})), DType::I32, {}, {INT32_MAX - 3.0});
  expect_vals(run1(Op::Sum, {I({2}, {INT32_MAX, 2})}, axes({0})), DType::I32, {}, {INT32_MIN + 1.0});  // wraps
  expect_vals(run1(Op::Max, {x}, axes({0})), DType::I32, {}, {INT32_MAX});
  expect_vals(run1(Op::Min, {x}, axes({0})), DType::I32, {}, {-4});
  expect_vals(run1(Op::Prod, {I({3}, {-2, 3, 5})}, axes({0})), DType::I32, {}, {-30});
  EXPECT_THROW(run1(Op::Mean, {x}, axes({0})), KernelError);
}

TEST(Reduce, MaxMinNan) {
  Tensor x = F({2, 3}, {1, kNaN, 3, -1, -5, 2});
  expect_vals(run1(Op::Max, {x}, axes({1})), DType::F32, {2}, {kNaN, 2});
  expect_vals(run1(Op::Min, {x}, axes({1})), DType::F32, {2}, {kNaN, -5});
}

TEST(Reduce, AllAny) {
  Tensor x = B({2, 2}, {1, 0, 1, 1});
  expect_vals(run1(Op::All, {x}, axes({1})), DType::Bool, {2}, {0, 1});
  expect_vals(run1(Op::Any, {x}, axes({0, 1})), DType::Bool, {}, {1});
  EXPECT_THROW(run1(Op::All, {F({1}, {1})}, axes({0})), KernelError);
  EXPECT_THROW(run1(Op::Sum, {x}, axes({0})), KernelError);
}

TEST(Reduce, EmptyAxis) {
  Tensor x = F({2, 0}, {});
  expect_vals(run1(Op::Sum, {x}, axes({1})), DType::F32, {2}, {0, 0});
  expect_vals(run1(Op::Prod, {x}, axes({1})), DType::F32, {2}, {1, 1});
  expect_vals(run1(Op::All, {B({2, 0}, {})}, axes({1})), DType::Bool, {2}, {1, 1});
  expect_vals(run1(Op::Any, {B({2, 0}, {})}, axes({1})), DType::Bool, {2}, {0, 0});
  try {
    run1(Op::Max, {x}, axes({1}));
    FAIL() << "expected KernelError";
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "max: max of an empty axis");
  }
  EXPECT_THROW(run1(Op::Min, {x}, axes({1})), KernelError);
  expect_vals(run1(Op::Max, {x}, axes({0})), DType::F32, {0}, {});  // nothing to reduce into
}

TEST(Reduce, RankZero) {
  expect_vals(run1(Op::Sum, {F({}, {3})}, axes({})), DType::F32, {}, {3});
  EXPECT_THROW(run1(Op::Sum, {F({}, {3})}, axes({0})), KernelError);
}

TEST(Reduce, BadAxes) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(run1(Op::Sum, {x}, axes({2})), KernelError);
  EXPECT_THROW(run1(Op::Sum, {x}, axes({1, 0})), KernelError);
  EXPECT_THROW(run1(Op::Sum, {x}, axes({1, 1})), KernelError);
}

TEST(Reduce, HalfAccumulatesInDouble) {
  // 4096 ones: an f16 running sum would stall at 2048.
  Tensor x(DType::F16, {4096});
  for (int i = 0; i < 4096; ++i) x.set(i, 1.0);
  expect_vals(run1(Op::Sum, {x}, axes({0})), DType::F16, {}, {4096});
}

TEST(ArgMaxMin, TiesAndNan) {
  Tensor x = F({2, 4}, {1, 3, 3, 0, 2, kNaN, 5, kNaN});
  expect_vals(run1(Op::ArgMax, {x}, axis(1)), DType::I32, {2}, {1, 1});
  expect_vals(run1(Op::ArgMin, {x}, axis(1)), DType::I32, {2}, {3, 1});
  expect_vals(run1(Op::ArgMax, {x}, axis(0, true)), DType::I32, {1, 4}, {1, 1, 1, 1});
  expect_vals(run1(Op::ArgMin, {I({3}, {2, -1, -1})}, axis(0)), DType::I32, {}, {1});
  EXPECT_THROW(run1(Op::ArgMax, {F({0, 2}, {})}, axis(0)), KernelError);
  EXPECT_THROW(run1(Op::ArgMax, {x}, axis(2)), KernelError);
}

TEST(CumSum, FloatsAndInts) {
  expect_vals(run1(Op::CumSum, {F({2, 3}, {1, 2, 3, 4, 5, 6})}, axis(1)), DType::F32, {2, 3}, {1, 3, 6, 4, 9, 15});
  expect_vals(run1(Op::CumSum, {I({2, 2}, {1, 2, 3, 4})}, axis(0)), DType::I32, {2, 2}, {1, 2, 4, 6});
  expect_vals(run1(Op::CumSum, {F({0}, {})}, axis(0)), DType::F32, {0}, {});
  EXPECT_THROW(run1(Op::CumSum, {B({1}, {1})}, axis(0)), KernelError);
}

}  // namespace
}  // namespace grape::cpu::test
