// Hand-checked cases for softmax, log_softmax, layer_norm, rms_norm, matmul and linear.
#include "tests/kernels/kernel_test_util.h"

namespace grape::cpu::test {
namespace {

using ir::Op;

KernelAttrs axis(int64_t ax) {
  KernelAttrs a;
  a.axis = ax;
  return a;
}

TEST(Softmax, StableAndAxis) {
  Tensor x = F({2, 2}, {1000, 1000, 0, std::log(3.0)});
  expect_near(run1(Op::Softmax, {x}, axis(1)), {2, 2}, {0.5, 0.5, 0.25, 0.75});
  expect_near(run1(Op::LogSoftmax, {x}, axis(1)), {2, 2}, {std::log(0.5), std::log(0.5), std::log(0.25), std::log(0.75)});
  Tensor s = run1(Op::Softmax, {x}, axis(0));
  EXPECT_NEAR(s.get(0), 1.0, 1e-7);
  Tensor m = run1(Op::Softmax, {F({3}, {-kInf, 0, 0})}, axis(0));
  expect_near(m, {3}, {0, 0.5, 0.5});
  EXPECT_THROW(run1(Op::Softmax, {I({2}, {1, 2})}, axis(0)), KernelError);
  EXPECT_THROW(run1(Op::Softmax, {x}, axis(2)), KernelError);
  expect_vals(run1(Op::Softmax, {F({0, 3}, {})}, axis(1)), DType::F32, {0, 3}, {});
}

TEST(LayerNorm, Basic) {
  Tensor x = F({2, 2}, {1, 3, 0, 4});
  Tensor g = F({2}, {1, 2}), b = F({2}, {0, 1});
  KernelAttrs a;
  a.eps = 0;
  expect_near(run1(Op::LayerNorm, {x, g, b}, a), {2, 2}, {-1, 3, -1, 3});
  a.eps = 1e-5;
  EXPECT_THROW(run1(Op::LayerNorm, {x, F({3}, {1, 1, 1}), b}, a), KernelError);
  EXPECT_THROW(run1(Op::LayerNorm, {x, g, T(DType::F16, {2}, {0, 0})}, a), KernelError);
  EXPECT_THROW(run1(Op::LayerNorm, {F({}, {1}), g, b}, a), KernelError);
}

TEST(RmsNorm, Basic) {
  Tensor x = F({1, 2}, {3, 4});
  KernelAttrs a;
  a.eps = 0;
  double rms = std::sqrt(12.5);
  expect_near(run1(Op::RmsNorm, {x, F({2}, {1, 2})}, a), {1, 2}, {3 / rms, 8 / rms});
}

TEST(MatMul, Shapes) {
  Tensor a = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = F({3, 2}, {1, 0, 0, 1, 1, 1});
  expect_vals(run1(Op::MatMul, {a, b}), DType::F32, {2, 2}, {4, 5, 10, 11});
  expect_vals(run1(Op::MatMul, {F({3}, {1, 1, 1}), b}), DType::F32, {2}, {2, 2});
  expect_vals(run1(Op::MatMul, {a, F({3}, {1, 0, -1})}), DType::F32, {2}, {-2, -2});
  expect_vals(run1(Op::MatMul, {F({2}, {1, 2}), F({2}, {3, 4})}), DType::F32, {}, {11});
  // Batch broadcast: [2, 1, 2] @ [2, 1] -> [2, 1, 1]
  expect_vals(run1(Op::MatMul, {F({2, 1, 2}, {1, 2, 3, 4}), F({2, 1}, {1, 1})}), DType::F32, {2, 1, 1}, {3, 7});
  expect_vals(run1(Op::MatMul, {I({1, 2}, {2, 3}), I({2, 1}, {4, 5})}), DType::I32, {1, 1}, {23});
  expect_vals(run1(Op::MatMul, {F({2, 0}, {}), F({0, 3}, {})}), DType::F32, {2, 3}, {0, 0, 0, 0, 0, 0});
  try {
    run1(Op::MatMul, {F({2, 3}, std::vector<double>(6)), F({4, 5}, std::vector<double>(20))});
    FAIL();
  } catch (const KernelError& e) {
    EXPECT_STREQ(e.what(), "matmul: inner dims differ: [2, 3] @ [4, 5]");
  }
  EXPECT_THROW(run1(Op::MatMul, {F({}, {1}), F({1}, {1})}), KernelError);
  EXPECT_THROW(run1(Op::MatMul, {F({2, 1, 1}, {1, 1}), F({3, 1, 1}, {1, 1, 1})}), KernelError);
}

TEST(MatMul, LargeParallelMatchesSerialReference) {
  int64_t M = 64, K = 128, N = 160;  // 1.3e6 MACs: takes the threaded path
  Tensor a(DType::F32, {M, K}), b(DType::F32, {K, N});
  for (int64_t i = 0; i < a.numel(); ++i) a.set(i, (i % 7) - 3);
  for (int64_t i = 0; i < b.numel(); ++i) b.set(i, (i % 5) - 2);
  Tensor c = run1(Op::MatMul, {a, b});
  for (int64_t i = 0; i < M; i += 13)
    for (int64_t j = 0; j < N; j += 11) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a.get(i * K + k) * b.get(k * N + j);
      EXPECT_EQ(c.get(i * N + j), s);
    }
}

TEST(Linear, WithAndWithoutBias) {
  Tensor x = F({2, 2}, {1, 2, 3, 4});
  Tensor w = F({3, 2}, {1, 0, 0, 1, 1, 1});
  Tensor b = F({3}, {10, 20, 30});
  expect_vals(run1(Op::Linear, {x, w}), DType::F32, {2, 3}, {1, 2, 3, 3, 4, 7});
  expect_vals(run1(Op::Linear, {x, w, b}), DType::F32, {2, 3}, {11, 22, 33, 13, 24, 37});
  expect_vals(run1(Op::Linear, {F({2}, {1, 2}), w}), DType::F32, {3}, {1, 2, 3});
  EXPECT_THROW(run1(Op::Linear, {x, F({2, 3}, std::vector<double>(6))}), KernelError);
  EXPECT_THROW(run1(Op::Linear, {x, w, F({2}, {1, 2})}), KernelError);
}

}  // namespace
}  // namespace grape::cpu::test
