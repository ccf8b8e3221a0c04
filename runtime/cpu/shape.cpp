// Data movement: permute, reshape, expand, concat, slice, slice_update. Every kernel returns a
// fresh contiguous tensor (no aliasing of the input's storage).
#include <algorithm>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

// Copies elements of `src` read at walker offset 0 (element units) into `dst` in order.
void gather_copy(const Tensor& src, Tensor& dst, StridedWalker w) {
  size_t es = dtype_size(src.dtype());
  const uint8_t* s = static_cast<const uint8_t*>(src.raw());
  uint8_t* d = static_cast<uint8_t*>(dst.raw());
  for (int64_t i = 0, n = dst.numel(); i < n; ++i, w.next())
    std::memcpy(d + i * es, s + w.offset(0) * es, es);
}

std::vector<Tensor> permute(const Tensor& x, const KernelAttrs& a) {
  Op op = Op::Permute;
  size_t r = x.rank();
  std::string perm = shape_to_string(a.axes);
  if (a.axes.size() != r) fail(op, "permutation " + perm + " does not match rank of " + shp(x));
  std::vector<bool> used(r, false);
  for (int64_t p : a.axes) {
    if (p < 0 || p >= static_cast<int64_t>(r) || used[p])
      fail(op, perm + " is not a permutation of the axes of " + shp(x));
    used[p] = true;
  }
  std::vector<int64_t> st = contiguous_strides(x.shape()), pst(r);
  Shape os(r);
  for (size_t i = 0; i < r; ++i) {
    os[i] = x.dim(a.axes[i]);
    pst[i] = st[a.axes[i]];
  }
  Tensor out = new_output(x.dtype(), os);
  gather_copy(x, out, StridedWalker(os, {pst}));
  return {out};
}

std::vector<Tensor> reshape(const Tensor& x, const KernelAttrs& a) {
  for (int64_t d : a.shape)
    if (d < 0) fail(Op::Reshape, "unresolved or negative dimension in " + shape_to_string(a.shape));
  if (num_elements(a.shape) != x.numel())
    fail(Op::Reshape, "cannot reshape " + shp(x) + " (" + std::to_string(x.numel()) + " elements) to " +
                          shape_to_string(a.shape));
  return {x.clone().reshaped(a.shape)};
}

std::vector<Tensor> expand(const Tensor& x, const KernelAttrs& a) {
  for (int64_t d : a.shape)
    if (d < 0) fail(Op::Expand, "negative dimension in " + shape_to_string(a.shape));
  if (!broadcastable_to(x.shape(), a.shape))
    fail(Op::Expand, "cannot broadcast " + shp(x) + " to " + shape_to_string(a.shape));
  return {broadcast_to(x, a.shape)};
}

std::vector<Tensor> concat(const std::vector<Tensor>& in, const KernelAttrs& a) {
  Op op = Op::Concat;
  const Tensor& f = in[0];
  if (a.axis < 0 || a.axis >= static_cast<int64_t>(f.rank()))
    fail(op, "axis " + std::to_string(a.axis) + " out of range for shape " + shp(f));
  size_t ax = static_cast<size_t>(a.axis);
  Shape os = f.shape();
  os[ax] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Tensor& t = in[i];
    if (t.dtype() != f.dtype())
      fail(op, "operand " + std::to_string(i) + " has dtype " + dtype_name(t.dtype()) + ", expected " +
                   dtype_name(f.dtype()));
    bool ok = t.rank() == f.rank();
    for (size_t d = 0; ok && d < f.rank(); ++d) ok = d == ax || t.dim(d) == f.dim(d);
    if (!ok) fail(op, "shapes " + shp(f) + " and " + shp(t) + " differ outside axis " + std::to_string(ax));
    os[ax] += t.dim(ax);
  }
  Tensor out = new_output(f.dtype(), os);
  size_t es = dtype_size(f.dtype());
  int64_t outer = prod(os, 0, ax), inner = prod(os, ax + 1, os.size());
  uint8_t* d = static_cast<uint8_t*>(out.raw());
  int64_t row = os[ax] * inner, col = 0;  // element offset of the current operand inside a row
  for (const Tensor& t : in) {
    int64_t chunk = t.dim(ax) * inner;
    const uint8_t* s = static_cast<const uint8_t*>(t.raw());
    for (int64_t o = 0; o < outer && chunk > 0; ++o)
      std::memcpy(d + (o * row + col) * es, s + o * chunk * es, static_cast<size_t>(chunk) * es);
    col += chunk;
  }
  return {out};
}

// A validated slice: the region's shape before squeezing, the result shape after, and how to
// address it in the source (base offset and per-axis strides, in elements).
struct Region {
  Shape full, squeezed;
  int64_t base = 0;
  std::vector<int64_t> strides;
};

Region region(Op op, const Tensor& x, const std::vector<SliceSpec>& sl) {
  if (sl.size() != x.rank())
    fail(op, std::to_string(sl.size()) + " slice specs for a tensor of shape " + shp(x));
  Region r;
  std::vector<int64_t> st = contiguous_strides(x.shape());
  for (size_t d = 0; d < sl.size(); ++d) {
    const SliceSpec& s = sl[d];
    int64_t dim = x.dim(d);
    std::string where = "axis " + std::to_string(d) + " of " + shp(x) + ": start " + std::to_string(s.start) +
                        ", size " + std::to_string(s.size) + ", step " + std::to_string(s.step);
    if (s.step < 1 || s.size < 0 || s.start < 0) fail(op, "invalid slice on " + where);
    if (s.squeeze && s.size != 1) fail(op, "squeezed slice must have size 1 on " + where);
    bool fits = s.size == 0 ? s.start <= dim : s.start < dim && (s.size - 1) <= (dim - 1 - s.start) / s.step;
    if (!fits) fail(op, "slice out of range on " + where);
    r.full.push_back(s.size);
    if (!s.squeeze) r.squeezed.push_back(s.size);
    r.strides.push_back(st[d] * s.step);
    if (s.size > 0) r.base += s.start * st[d];
  }
  return r;
}

std::vector<Tensor> slice(const Tensor& x, const KernelAttrs& a) {
  Region r = region(Op::Slice, x, a.slices);
  Tensor out = new_output(x.dtype(), r.full);
  gather_copy(x, out, StridedWalker(r.full, {r.strides}, {r.base}));
  return {out.reshaped(r.squeezed)};
}

std::vector<Tensor> slice_update(const Tensor& x, const Tensor& v, const KernelAttrs& a) {
  Op op = Op::SliceUpdate;
  if (v.dtype() != x.dtype())
    fail(op, std::string("value dtype ") + dtype_name(v.dtype()) + " differs from " + dtype_name(x.dtype()));
  Region r = region(op, x, a.slices);
  if (!broadcastable_to(v.shape(), r.squeezed))
    fail(op, "value of shape " + shp(v) + " does not broadcast to the slice shape " +
                 shape_to_string(r.squeezed));
  Tensor src = broadcast_to(v, r.squeezed);  // same C order as the unsqueezed region
  Tensor out = x.clone();
  size_t es = dtype_size(x.dtype());
  const uint8_t* s = static_cast<const uint8_t*>(src.raw());
  uint8_t* d = static_cast<uint8_t*>(out.raw());
  StridedWalker w(r.full, {r.strides}, {r.base});
  for (int64_t i = 0, n = src.numel(); i < n; ++i, w.next())
    std::memcpy(d + w.offset(0) * es, s + i * es, es);
  return {out};
}

}  // namespace

std::vector<Tensor> run_shape(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  switch (op) {
    case Op::Permute: return permute(in[0], a);
    case Op::Reshape: return reshape(in[0], a);
    case Op::Expand: return expand(in[0], a);
    case Op::Concat: return concat(in, a);
    case Op::Slice: return slice(in[0], a);
    case Op::SliceUpdate: return slice_update(in[0], in[1], a);
    default: fail(op, "not a shape op");
  }
}

}  // namespace grape::cpu::detail
