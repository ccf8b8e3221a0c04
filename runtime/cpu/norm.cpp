// Softmax / log_softmax over one axis (max-subtracted, in double) and layer_norm / rms_norm over
// the last axis (statistics in double, biased variance).
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

// A row whose max is -inf (all -inf) or +inf gives NaN, as PyTorch does.
std::vector<Tensor> softmax(Op op, const Tensor& x, const KernelAttrs& a) {
  if (!is_float(x.dtype())) fail(op, std::string("expects a float dtype, got ") + dtype_name(x.dtype()));
  if (a.axis < 0 || a.axis >= static_cast<int64_t>(x.rank()))
    fail(op, "axis " + std::to_string(a.axis) + " out of range for shape " + shp(x));
  const Shape& s = x.shape();
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = prod(s, 0, ax), len = s[ax], inner = prod(s, ax + 1, s.size());
  Tensor out = new_output(x.dtype(), s);
  std::vector<double> row(static_cast<size_t>(len));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * len * inner + in;
      double mx = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t j = 0; j < len; ++j) {
        row[j] = load_f(x, base + j * inner);
        nan |= std::isnan(row[j]);
        mx = std::max(mx, row[j]);
      }
      if (nan) mx = std::numeric_limits<double>::quiet_NaN();
      double sum = 0;
      for (int64_t j = 0; j < len; ++j) sum += std::exp(row[j] - mx);
      double lse = std::log(sum);
      for (int64_t j = 0; j < len; ++j) {
        double v = op == Op::Softmax ? std::exp(row[j] - mx) / sum : row[j] - mx - lse;
        store_d(out, base + j * inner, v);
      }
    }
  return {out};
}

std::vector<Tensor> norm(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  const Tensor& x = in[0];
  DType t = x.dtype();
  if (!is_float(t)) fail(op, std::string("expects a float dtype, got ") + dtype_name(t));
  if (x.rank() == 0) fail(op, "input must have at least one axis");
  int64_t n = x.shape().back();
  for (size_t i = 1; i < in.size(); ++i) {
    const char* what = i == 1 ? "weight" : "bias";
    if (in[i].dtype() != t)
      fail(op, std::string(what) + " dtype " + dtype_name(in[i].dtype()) + " differs from input dtype " +
                   dtype_name(t));
    if (in[i].shape() != Shape{n})
      fail(op, std::string(what) + " shape " + shp(in[i]) + " must be [" + std::to_string(n) +
                   "] for input " + shp(x));
  }
  if (!(a.eps >= 0)) fail(op, "eps must be non-negative");
  Tensor out = new_output(t, x.shape());
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  std::vector<double> row(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    int64_t base = r * n;
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < n; ++j) {
      row[j] = load_f(x, base + j);
      mean += row[j];
    }
    mean /= static_cast<double>(n);
    if (op == Op::LayerNorm) {
      for (int64_t j = 0; j < n; ++j) sq += (row[j] - mean) * (row[j] - mean);
    } else {
      for (int64_t j = 0; j < n; ++j) sq += row[j] * row[j];
      mean = 0;  // rms_norm does not centre
    }
    double inv = 1.0 / std::sqrt(sq / static_cast<double>(n) + a.eps);
    for (int64_t j = 0; j < n; ++j) {
      double v = (row[j] - mean) * inv * static_cast<double>(load_f(in[1], j));
      if (op == Op::LayerNorm) v += load_f(in[2], j);
      store_d(out, base + j, v);
    }
  }
  return {out};
}

}  // namespace

std::vector<Tensor> run_norm(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  if (op == Op::Softmax || op == Op::LogSoftmax) return softmax(op, in[0], a);
  return norm(op, in, a);
}

}  // namespace grape::cpu::detail
