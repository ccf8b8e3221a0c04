// Hand-checked cases for permute, reshape, expand, concat, slice, slice_update and
// resolve_dynamic_start.
#include "tests/kernels/kernel_test_util.h"

namespace grape::cpu::test {
namespace {

using ir::Op;

TEST(Permute, Transpose3d) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  KernelAttrs a;
  a.axes = {1, 0};
  expect_vals(run1(Op::Permute, {x}, a), DType::F32, {3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor y = I({2, 1, 2}, {1, 2, 3, 4});
  a.axes = {2, 0, 1};
  expect_vals(run1(Op::Permute, {y}, a), DType::I32, {2, 2, 1}, {1, 3, 2, 4});
  a.axes = {0, 0};
  EXPECT_THROW(run1(Op::Permute, {x}, a), KernelError);
  a.axes = {0};
  EXPECT_THROW(run1(Op::Permute, {x}, a), KernelError);
  a.axes = {};
  expect_vals(run1(Op::Permute, {F({}, {5})}, a), DType::F32, {}, {5});
}

TEST(Reshape, CopiesAndChecks) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  KernelAttrs a;
  a.shape = {3, 2};
  Tensor r = run1(Op::Reshape, {x}, a);
  expect_vals(r, DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_FALSE(r.shares_storage_with(x));
  a.shape = {4};
  EXPECT_THROW(run1(Op::Reshape, {x}, a), KernelError);
  a.shape = {-1, 2};
  EXPECT_THROW(run1(Op::Reshape, {x}, a), KernelError);
}

TEST(Expand, BroadcastTo) {
  KernelAttrs a;
  a.shape = {2, 2, 3};
  expect_vals(run1(Op::Expand, {F({2, 1}, {1, 2})}, a), DType::F32, {2, 2, 3}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  a.shape = {3};
  EXPECT_THROW(run1(Op::Expand, {F({2}, {1, 2})}, a), KernelError);
  a.shape = {2, 0};
  expect_vals(run1(Op::Expand, {F({1}, {1})}, a), DType::F32, {2, 0}, {});
}

TEST(Concat, Axis) {
  KernelAttrs a;
  a.axis = 1;
  Tensor x = I({2, 1}, {1, 2}), y = I({2, 2}, {3, 4, 5, 6}), e = I({2, 0}, {});
  expect_vals(run1(Op::Concat, {x, e, y}, a), DType::I32, {2, 3}, {1, 3, 4, 2, 5, 6});
  a.axis = 0;
  EXPECT_THROW(run1(Op::Concat, {x, y}, a), KernelError);
  EXPECT_THROW(run1(Op::Concat, {x, F({2, 1}, {1, 2})}, a), KernelError);
  expect_vals(run1(Op::Concat, {x, x}, a), DType::I32, {4, 1}, {1, 2, 1, 2});
  a.axis = 0;
  EXPECT_THROW(run1(Op::Concat, {F({}, {1})}, a), KernelError);
}

KernelAttrs slices(std::vector<SliceSpec> s) {
  KernelAttrs a;
  a.slices = std::move(s);
  return a;
}

TEST(Slice, StepsAndSqueeze) {
  Tensor x = F({3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  expect_vals(run1(Op::Slice, {x}, slices({{0, 2, 2, false}, {1, 2, 2, false}})), DType::F32, {2, 2}, {1, 3, 9, 11});
  expect_vals(run1(Op::Slice, {x}, slices({{0, 3, 1, false}, {3, 1, 1, true}})), DType::F32, {3}, {3, 7, 11});
  expect_vals(run1(Op::Slice, {x}, slices({{2, 1, 1, true}, {0, 4, 1, false}})), DType::F32, {4}, {8, 9, 10, 11});
  expect_vals(run1(Op::Slice, {x}, slices({{3, 0, 1, false}, {0, 4, 1, false}})), DType::F32, {0, 4}, {});
  expect_vals(run1(Op::Slice, {x}, slices({{1, 1, 1, true}, {2, 1, 1, true}})), DType::F32, {}, {6});
  // Extra operands (dynamic starts already resolved) are ignored.
  expect_vals(run1(Op::Slice, {x, I({}, {1})}, slices({{1, 1, 1, true}, {0, 1, 1, true}})), DType::F32, {}, {4});
}

TEST(Slice, RejectsOutOfRange) {
  Tensor x = F({3, 4}, std::vector<double>(12));
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{0, 3, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{0, 2, 2, false}, {0, 3, 2, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{3, 1, 1, false}, {0, 4, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{-1, 1, 1, false}, {0, 4, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{0, 1, 0, false}, {0, 4, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{0, 2, 1, true}, {0, 4, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{4, 0, 1, false}, {0, 4, 1, false}})), KernelError);
  EXPECT_THROW(run1(Op::Slice, {x}, slices({{0, INT64_MAX, INT64_MAX, false}, {0, 4, 1, false}})), KernelError);
}

TEST(SliceUpdate, WritesBroadcastValue) {
  Tensor x = I({2, 3}, {0, 1, 2, 3, 4, 5});
  // x[:, 1] = [7, 8]
  Tensor r = run1(Op::SliceUpdate, {x, I({2}, {7, 8})}, slices({{0, 2, 1, false}, {1, 1, 1, true}}));
  expect_vals(r, DType::I32, {2, 3}, {0, 7, 2, 3, 8, 5});
  expect_vals(x, DType::I32, {2, 3}, {0, 1, 2, 3, 4, 5});  // input untouched
  // x[1, ::2] = -1 (scalar broadcast)
  expect_vals(run1(Op::SliceUpdate, {x, I({}, {-1})}, slices({{1, 1, 1, true}, {0, 2, 2, false}})), DType::I32, {2, 3},
              {0, 1, 2, -1, 4, -1});
  EXPECT_THROW(run1(Op::SliceUpdate, {x, I({3}, {1, 2, 3})}, slices({{0, 2, 1, false}, {1, 1, 1, true}})), KernelError);
  EXPECT_THROW(run1(Op::SliceUpdate, {x, F({}, {1})}, slices({{0, 2, 1, false}, {1, 1, 1, true}})), KernelError);
  EXPECT_THROW(run1(Op::SliceUpdate, {x, I({}, {1})}, slices({{0, 2, 1, false}, {2, 2, 1, false}})), KernelError);
}

TEST(ResolveDynamicStart, WrapsAndClamps) {
  EXPECT_EQ(resolve_dynamic_start(2, 10, 3), 2);
  EXPECT_EQ(resolve_dynamic_start(-1, 10, 1), 9);
  EXPECT_EQ(resolve_dynamic_start(-1, 10, 3), 7);
  EXPECT_EQ(resolve_dynamic_start(9, 10, 3), 7);
  EXPECT_EQ(resolve_dynamic_start(-100, 10, 3), 0);
  EXPECT_EQ(resolve_dynamic_start(100, 10, 0), 10);
  EXPECT_EQ(resolve_dynamic_start(INT64_MIN, 10, 1), 0);
  EXPECT_THROW(resolve_dynamic_start(0, 2, 3), KernelError);
}

}  // namespace
}  // namespace grape::cpu::test
