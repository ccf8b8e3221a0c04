// Reductions (sum mean max min prod all any) over a set of axes, argmax/argmin over one axis,
// and the inclusive scan cumsum. Float accumulation is in double, integer accumulation in int64
// (wrapping), and results are rounded once to the result dtype.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

void check_axis(Op op, int64_t axis, const Tensor& x) {
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    fail(op, "axis " + std::to_string(axis) + " out of range for shape " + shp(x));
}

std::vector<Tensor> reduce(Op op, const Tensor& x, const KernelAttrs& a) {
  DType t = x.dtype();
  const Shape& s = x.shape();
  size_t rank = s.size();
  for (size_t i = 0; i < a.axes.size(); ++i) {
    if (a.axes[i] < 0 || a.axes[i] >= static_cast<int64_t>(rank))
      fail(op, "axis " + std::to_string(a.axes[i]) + " out of range for shape " + shp(x));
    if (i > 0 && a.axes[i] <= a.axes[i - 1]) fail(op, "axes must be sorted and unique");
  }
  bool logical = op == Op::All || op == Op::Any;
  if (logical && t != DType::Bool) fail(op, std::string("expects bool, got ") + dtype_name(t));
  if (!logical && t == DType::Bool) fail(op, "bool input is not supported (use all/any)");
  if (op == Op::Mean && !is_float(t)) fail(op, std::string("expects a float dtype, got ") + dtype_name(t));

  std::vector<bool> reduced(rank, false);
  for (int64_t ax : a.axes) reduced[ax] = true;
  Shape out_shape, kept;  // kept: the input shape with reduced axes set to 1
  for (size_t d = 0; d < rank; ++d) {
    kept.push_back(reduced[d] ? 1 : s[d]);
    if (!reduced[d] || a.keepdims) out_shape.push_back(kept.back());
  }
  int64_t count = 1;
  for (int64_t ax : a.axes) count *= s[ax];
  Tensor out = new_output(t, out_shape);
  int64_t n_out = out.numel(), n_in = x.numel();
  if (n_out == 0) return {out};
  if ((op == Op::Max || op == Op::Min) && count == 0)
    fail(op, std::string(ir::op_name(op)) + " of an empty axis");

  std::vector<int64_t> out_strides = broadcast_strides(kept, s);
  StridedWalker w(s, {out_strides});
  if (logical) {
    std::vector<uint8_t> acc(n_out, op == Op::All ? 1 : 0);
    for (int64_t i = 0; i < n_in; ++i, w.next()) {
      bool v = x.data<uint8_t>()[i];
      uint8_t& r = acc[w.offset(0)];
      r = op == Op::All ? (r && v) : (r || v);
    }
    for (int64_t o = 0; o < n_out; ++o) out.data<uint8_t>()[o] = acc[o];
  } else if (is_float(t)) {
    double init = op == Op::Prod ? 1.0 : 0.0;
    std::vector<double> acc(n_out, init);
    std::vector<uint8_t> seen(n_out, 0);
    for (int64_t i = 0; i < n_in; ++i, w.next()) {
      double v = load_f(x, i);
      int64_t o = w.offset(0);
      double& r = acc[o];
      switch (op) {
        case Op::Sum:
        case Op::Mean: r += v; break;
        case Op::Prod: r *= v; break;
        case Op::Max:
        case Op::Min:  // NaN propagates
          if (!seen[o] || std::isnan(v))
            r = v;
          else if (!std::isnan(r))
            r = op == Op::Max ? std::max(r, v) : std::min(r, v);
          seen[o] = 1;
          break;
        default: break;
      }
    }
    for (int64_t o = 0; o < n_out; ++o)
      store_d(out, o, op == Op::Mean ? acc[o] / static_cast<double>(count) : acc[o]);  // mean of empty: NaN
  } else {
    std::vector<int64_t> acc(n_out, op == Op::Prod ? 1 : 0);
    std::vector<uint8_t> seen(n_out, 0);
    for (int64_t i = 0; i < n_in; ++i, w.next()) {
      int64_t v = load_i(x, i);
      int64_t o = w.offset(0);
      int64_t& r = acc[o];
      switch (op) {
        case Op::Sum: r = wrap_add(r, v); break;
        case Op::Prod: r = wrap_mul(r, v); break;
        case Op::Max:
          r = seen[o] ? std::max(r, v) : v;
          seen[o] = 1;
          break;
        case Op::Min:
          r = seen[o] ? std::min(r, v) : v;
          seen[o] = 1;
          break;
        default: break;
      }
    }
    for (int64_t o = 0; o < n_out; ++o) store_i(out, o, acc[o]);
  }
  return {out};
}

// First index of the max (min); a NaN counts as both the maximum and the minimum, so the first
// NaN wins (NumPy).
std::vector<Tensor> arg_reduce(Op op, const Tensor& x, const KernelAttrs& a) {
  check_axis(op, a.axis, x);
  if (x.dtype() == DType::Bool) fail(op, "bool input is not supported");
  const Shape& s = x.shape();
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = prod(s, 0, ax), len = s[ax], inner = prod(s, ax + 1, s.size());
  Shape out_shape;
  for (size_t d = 0; d < s.size(); ++d)
    if (d != ax)
      out_shape.push_back(s[d]);
    else if (a.keepdims)
      out_shape.push_back(1);
  Tensor out = new_output(DType::I32, out_shape);
  if (out.numel() == 0) return {out};
  if (len == 0) fail(op, std::string(ir::op_name(op)) + " of an empty axis");
  bool is_max = op == Op::ArgMax;
  bool fl = is_float(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * len * inner + in, best = 0;
      if (fl) {
        double bv = load_f(x, base);
        for (int64_t j = 1; j < len && !std::isnan(bv); ++j) {
          double v = load_f(x, base + j * inner);
          if (std::isnan(v) || (is_max ? v > bv : v < bv)) {
            bv = v;
            best = j;
          }
        }
      } else {
        int64_t bv = load_i(x, base);
        for (int64_t j = 1; j < len; ++j) {
          int64_t v = load_i(x, base + j * inner);
          if (is_max ? v > bv : v < bv) {
            bv = v;
            best = j;
          }
        }
      }
      out.data<int32_t>()[o * inner + in] = static_cast<int32_t>(best);
    }
  return {out};
}

std::vector<Tensor> cumsum(const Tensor& x, const KernelAttrs& a) {
  Op op = Op::CumSum;
  check_axis(op, a.axis, x);
  if (x.dtype() == DType::Bool) fail(op, "bool input is not supported");
  const Shape& s = x.shape();
  size_t ax = static_cast<size_t>(a.axis);
  int64_t outer = prod(s, 0, ax), len = s[ax], inner = prod(s, ax + 1, s.size());
  Tensor out = new_output(x.dtype(), s);
  bool fl = is_float(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      double dacc = 0;
      int64_t iacc = 0;
      for (int64_t j = 0; j < len; ++j) {
        int64_t i = o * len * inner + j * inner + in;
        if (fl) {
          dacc += load_f(x, i);
          store_d(out, i, dacc);
        } else {
          iacc = wrap_add(iacc, load_i(x, i));
          store_i(out, i, iacc);
        }
      }
    }
  return {out};
}

}  // namespace

std::vector<Tensor> run_reduce(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  if (op == Op::ArgMax || op == Op::ArgMin) return arg_reduce(op, in[0], a);
  if (op == Op::CumSum) return cumsum(in[0], a);
  return reduce(op, in[0], a);
}

}  // namespace grape::cpu::detail
