// Helpers for the CPU kernel tests: build small tensors from literals and read them back.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <limits>
#include <vector>

#include "runtime/cpu/kernels.h"

namespace grape::cpu::test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline Tensor T(DType t, Shape s, std::vector<double> v) {
  Tensor x(t, std::move(s));
  if (static_cast<int64_t>(v.size()) != x.numel()) throw std::invalid_argument("test tensor: wrong value count");
  for (size_t i = 0; i < v.size(); ++i) x.set(static_cast<int64_t>(i), v[i]);
  return x;
}
inline Tensor F(Shape s, std::vector<double> v) { return T(DType::F32, std::move(s), std::move(v)); }
inline Tensor I(Shape s, std::vector<double> v) { return T(DType::I32, std::move(s), std::move(v)); }
inline Tensor L(Shape s, std::vector<int64_t> v) {
  Tensor x(DType::I64, std::move(s));
  for (size_t i = 0; i < v.size(); ++i) x.set_int(static_cast<int64_t>(i), v[i]);
  return x;
}
inline Tensor B(Shape s, std::vector<double> v) { return T(DType::Bool, std::move(s), std::move(v)); }

inline std::vector<double> vals(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = t.get(i);
  return v;
}

inline Tensor run1(ir::Op op, std::vector<Tensor> in, const KernelAttrs& a = {}) {
  auto r = run_kernel(op, in, a);
  EXPECT_EQ(r.size(), 1u);
  return r.at(0);
}

// Exact comparison that treats NaN == NaN.
inline void expect_vals(const Tensor& t, DType dt, const Shape& s, const std::vector<double>& want) {
  EXPECT_EQ(t.dtype(), dt) << dtype_name(t.dtype());
  EXPECT_EQ(t.shape(), s) << shape_to_string(t.shape());
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) EXPECT_TRUE(std::isnan(got[i])) << "element " << i;
    else EXPECT_EQ(got[i], want[i]) << "element " << i;
  }
}

inline void expect_near(const Tensor& t, const Shape& s, const std::vector<double>& want, double tol = 1e-6) {
  EXPECT_EQ(t.shape(), s) << shape_to_string(t.shape());
  auto got = vals(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << "element " << i;
}

}  // namespace grape::cpu::test
