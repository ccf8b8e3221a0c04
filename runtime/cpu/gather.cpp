// Gathers: take, take_along_axis, topk, one_hot.
// Index rule (take, take_along_axis): a negative index wraps once (i + dim), then the result is
// clamped into [0, dim - 1]. Never faults, and matches what a GPU kernel can do without a trap.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

int64_t clamp_index(int64_t i, int64_t dim) {
  if (i < 0) i += dim;
  return std::clamp<int64_t>(i, 0, dim - 1);
}

void check_index_tensor(Op op, const Tensor& idx) {
  if (!is_int(idx.dtype()))
    fail(op, std::string("indices must be i32 or i64, got ") + dtype_name(idx.dtype()));
}

void check_axis(Op op, int64_t axis, const Tensor& x) {
  if (axis < 0 || axis >= static_cast<int64_t>(x.rank()))
    fail(op, "axis " + std::to_string(axis) + " out of range for shape " + shp(x));
}

std::vector<Tensor> take(const Tensor& x, const Tensor& idx, const KernelAttrs& a) {
  Op op = Op::Take;
  check_index_tensor(op, idx);
  check_axis(op, a.axis, x);
  size_t ax = static_cast<size_t>(a.axis);
  const Shape& s = x.shape();
  int64_t outer = prod(s, 0, ax), dim = s[ax], inner = prod(s, ax + 1, s.size()), ni = idx.numel();
  Shape os(s.begin(), s.begin() + ax);
  os.insert(os.end(), idx.shape().begin(), idx.shape().end());
  os.insert(os.end(), s.begin() + ax + 1, s.end());
  Tensor out = new_output(x.dtype(), os);
  if (out.numel() == 0) return {out};
  if (dim == 0) fail(op, "cannot take from an empty axis of " + shp(x));
  size_t es = dtype_size(x.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < ni; ++j) {
      int64_t i = clamp_index(load_i(idx, j), dim);
      std::memcpy(dst + ((o * ni + j) * inner) * es, src + ((o * dim + i) * inner) * es,
                  static_cast<size_t>(inner) * es);
    }
  return {out};
}

std::vector<Tensor> take_along_axis(const Tensor& x, const Tensor& idx, const KernelAttrs& a) {
  Op op = Op::TakeAlongAxis;
  check_index_tensor(op, idx);
  check_axis(op, a.axis, x);
  if (idx.rank() != x.rank()) fail(op, "indices " + shp(idx) + " must have the rank of the input " + shp(x));
  size_t ax = static_cast<size_t>(a.axis), r = x.rank();
  Shape os(r);
  for (size_t d = 0; d < r; ++d) {
    if (d == ax) {
      os[d] = idx.dim(d);
      continue;
    }
    int64_t xd = x.dim(d), id = idx.dim(d);
    if (xd != id && xd != 1 && id != 1)
      fail(op, "indices " + shp(idx) + " do not broadcast against input " + shp(x) + " outside axis " +
                   std::to_string(ax));
    os[d] = xd == 1 ? id : xd;
  }
  Tensor out = new_output(x.dtype(), os);
  if (out.numel() == 0) return {out};
  int64_t dim = x.dim(ax);
  if (dim == 0) fail(op, "cannot take from an empty axis of " + shp(x));
  // Walk the output; x's offset ignores the axis (added from the index), idx broadcasts.
  Shape xs = x.shape(), is = idx.shape();
  std::vector<int64_t> xst = broadcast_strides(xs, os), ist = broadcast_strides(is, os);
  int64_t axis_stride = contiguous_strides(xs)[ax];
  xst[ax] = 0;
  size_t es = dtype_size(x.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dst = static_cast<uint8_t*>(out.raw());
  StridedWalker w(os, {xst, ist});
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next()) {
    int64_t k = clamp_index(load_i(idx, w.offset(1)), dim);
    std::memcpy(dst + i * es, src + (w.offset(0) + k * axis_stride) * es, es);
  }
  return {out};
}

// Values sorted largest first; ties go to the lower index; NaN ranks above every number.
std::vector<Tensor> topk(const Tensor& x, const KernelAttrs& a) {
  Op op = Op::TopK;
  check_axis(op, a.axis, x);
  size_t ax = static_cast<size_t>(a.axis);
  const Shape& s = x.shape();
  int64_t outer = prod(s, 0, ax), dim = s[ax], inner = prod(s, ax + 1, s.size()), k = a.k;
  if (k < 0 || k > dim)
    fail(op,
         "k = " + std::to_string(k) + " is out of range for axis " + std::to_string(ax) + " of " + shp(x));
  Shape os = s;
  os[ax] = k;
  Tensor vals = new_output(x.dtype(), os), inds = new_output(DType::I32, os);
  bool fl = is_float(x.dtype());
  std::vector<int64_t> order(static_cast<size_t>(dim));
  std::vector<double> fv(static_cast<size_t>(dim));
  std::vector<int64_t> iv(static_cast<size_t>(dim));
  size_t es = dtype_size(x.dtype());
  const uint8_t* src = static_cast<const uint8_t*>(x.raw());
  uint8_t* dv = static_cast<uint8_t*>(vals.raw());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t base = o * dim * inner + in;
      for (int64_t j = 0; j < dim; ++j) {
        if (fl)
          fv[j] = load_f(x, base + j * inner);
        else
          iv[j] = load_i(x, base + j * inner);
      }
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](int64_t p, int64_t q) {
        if (fl) {
          bool pn = std::isnan(fv[p]), qn = std::isnan(fv[q]);
          if (pn || qn) return pn && !qn ? true : (pn && qn ? p < q : false);
          if (fv[p] != fv[q]) return fv[p] > fv[q];
        } else if (iv[p] != iv[q]) {
          return iv[p] > iv[q];
        }
        return p < q;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t o_off = o * k * inner + j * inner + in;
        std::memcpy(dv + o_off * es, src + (base + order[j] * inner) * es, es);
        inds.data<int32_t>()[o_off] = static_cast<int32_t>(order[j]);
      }
    }
  return {vals, inds};
}

// An index outside [0, k) (negative ones included) gives a row of zeros.
std::vector<Tensor> one_hot(const Tensor& idx, const KernelAttrs& a) {
  Op op = Op::OneHot;
  check_index_tensor(op, idx);
  if (a.k < 0) fail(op, "number of classes must be non-negative, got " + std::to_string(a.k));
  Shape os = idx.shape();
  os.push_back(a.k);
  Tensor out(a.dtype, os);  // zero-filled: only the ones are written
  for (int64_t i = 0, n = idx.numel(); i < n; ++i) {
    int64_t c = load_i(idx, i);
    if (c < 0 || c >= a.k) continue;
    if (is_float(a.dtype))
      store_d(out, i * a.k + c, 1.0);
    else
      store_i(out, i * a.k + c, 1);
  }
  return {out};
}

}  // namespace

std::vector<Tensor> run_gather(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  switch (op) {
    case Op::Take: return take(in[0], in[1], a);
    case Op::TakeAlongAxis: return take_along_axis(in[0], in[1], a);
    case Op::TopK: return topk(in[0], a);
    case Op::OneHot: return one_hot(in[0], a);
    default: fail(op, "not a gather op");
  }
}

}  // namespace grape::cpu::detail
