// Kernels that build a tensor from attributes: constant, full, arange, causal_mask, dim_value.
#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu::detail {
namespace {

using ir::Op;

void check_shape(Op op, const Shape& s) {
  for (int64_t d : s)
    if (d < 0) fail(op, "negative dimension in shape " + shape_to_string(s));
}

// Fills with attrs.value for float dtypes and attrs.ivalue (exact) for i32/i64/bool.
Tensor filled(Op op, const Shape& shape, const KernelAttrs& a) {
  check_shape(op, shape);
  Tensor out = new_output(a.dtype, shape);
  int64_t n = out.numel();
  if (n == 0) return out;
  if (is_float(a.dtype))
    store_d(out, 0, a.value);
  else
    store_i(out, 0, a.ivalue);
  size_t es = dtype_size(a.dtype);
  uint8_t* p = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 1; i < n; ++i) std::memcpy(p + i * es, p, es);
  return out;
}

}  // namespace

std::vector<Tensor> run_create(Op op, const std::vector<Tensor>& in, const KernelAttrs& a) {
  switch (op) {
    case Op::Constant: return {filled(op, {}, a)};
    case Op::Full: return {filled(op, a.shape, a)};
    case Op::Arange: {
      if (a.shape.size() != 1) fail(op, "shape attribute must be {n}, got " + shape_to_string(a.shape));
      check_shape(op, a.shape);
      Tensor out = new_output(a.dtype, a.shape);
      for (int64_t i = 0; i < a.shape[0]; ++i) {
        if (is_float(a.dtype))
          store_d(out, i, static_cast<double>(i));
        else
          store_i(out, i, i);
      }
      return {out};
    }
    case Op::CausalMask: {
      const Tensor& off = in[0];
      if (off.rank() != 0 || !is_int(off.dtype()))
        fail(op, std::string("offset must be an i32[] or i64[] scalar, got ") + dtype_name(off.dtype()) +
                     shp(off));
      if (a.shape.size() != 2) fail(op, "shape attribute must be {S, T}, got " + shape_to_string(a.shape));
      check_shape(op, a.shape);
      int64_t offset = load_i(off, 0), S = a.shape[0], T = a.shape[1];
      Tensor out = new_output(DType::Bool, a.shape);
      uint8_t* p = out.data<uint8_t>();
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < T; ++j) p[i * T + j] = j - i <= offset;  // j <= i + offset, overflow-free
      return {out};
    }
    case Op::DimValue: {
      if (a.shape.size() != 1) fail(op, "shape attribute must be {value}, got " + shape_to_string(a.shape));
      int64_t v = a.shape[0];
      if (v < INT32_MIN || v > INT32_MAX) fail(op, "value " + std::to_string(v) + " does not fit i32");
      return {Tensor::scalar_i32(static_cast<int32_t>(v))};
    }
    default: fail(op, "not a creation op");
  }
}

}  // namespace grape::cpu::detail
