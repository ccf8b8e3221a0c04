// run_kernel: arity checks and dispatch to the op families; shape helpers shared by all kernels.
#include <algorithm>
#include <cstring>
#include <limits>

#include "runtime/cpu/kernel_util_impl.h"

namespace grape::cpu {

using detail::fail;

Shape broadcast_shapes(const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      throw KernelError("cannot broadcast shapes " + shape_to_string(a) + " and " + shape_to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t resolve_dynamic_start(int64_t raw, int64_t dim, int64_t size) {
  if (dim < 0 || size < 0 || size > dim)
    throw KernelError("dynamic slice of size " + std::to_string(size) + " does not fit an axis of length " +
                      std::to_string(dim));
  if (raw < 0) raw += dim;  // wraps once; a start still negative is clamped to 0 below
  return std::clamp<int64_t>(raw, 0, dim - size);
}

std::vector<Tensor> run_kernel(ir::Op op, const std::vector<Tensor>& inputs, const KernelAttrs& attrs) {
  using ir::Op;
  if (static_cast<int>(op) >= ir::num_ops())
    throw KernelError("run_kernel: unknown op " + std::to_string(static_cast<int>(op)));
  const ir::OpInfo& info = ir::op_info(op);
  int n = static_cast<int>(inputs.size());
  if (n < info.min_operands || (info.max_operands >= 0 && n > info.max_operands)) {
    std::string want = info.max_operands < 0 ? "at least " + std::to_string(info.min_operands)
                       : info.min_operands == info.max_operands
                           ? std::to_string(info.min_operands)
                           : std::to_string(info.min_operands) + " to " + std::to_string(info.max_operands);
    fail(op, "expected " + want + " operands, got " + std::to_string(n));
  }
  for (int i = 0; i < n; ++i)
    if (!inputs[i].defined()) fail(op, "operand " + std::to_string(i) + " is undefined");

  switch (op) {
    case Op::Param:
    case Op::Weight:
    case Op::StateRead:
    case Op::StateWrite:
    case Op::Select:
    case Op::Loop: fail(op, "not a kernel (handled by the executor)");
    case Op::Constant:
    case Op::Full:
    case Op::Arange:
    case Op::CausalMask:
    case Op::DimValue: return detail::run_create(op, inputs, attrs);
    case Op::Sum:
    case Op::Mean:
    case Op::Max:
    case Op::Min:
    case Op::Prod:
    case Op::All:
    case Op::Any:
    case Op::ArgMax:
    case Op::ArgMin:
    case Op::CumSum: return detail::run_reduce(op, inputs, attrs);
    case Op::Softmax:
    case Op::LogSoftmax:
    case Op::LayerNorm:
    case Op::RmsNorm: return detail::run_norm(op, inputs, attrs);
    case Op::MatMul:
    case Op::Linear: return detail::run_linalg(op, inputs, attrs);
    case Op::Permute:
    case Op::Reshape:
    case Op::Expand:
    case Op::Concat:
    case Op::Slice:
    case Op::SliceUpdate: return detail::run_shape(op, inputs, attrs);
    case Op::Take:
    case Op::TakeAlongAxis:
    case Op::TopK:
    case Op::OneHot: return detail::run_gather(op, inputs, attrs);
    default:
      if (ir::is_elementwise(op)) return detail::run_elementwise(op, inputs, attrs);
      fail(op, "no CPU kernel");
  }
}

namespace detail {

Tensor new_output(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
#ifndef NDEBUG
  poison(t);
#endif
  return t;
}

void poison(Tensor& t) {
  uint8_t* p = static_cast<uint8_t*>(t.raw());
  int64_t n = t.numel();
  switch (t.dtype()) {
    case DType::F32: std::fill_n(t.data<float>(), n, std::numeric_limits<float>::quiet_NaN()); break;
    case DType::F16: std::fill_n(t.data<uint16_t>(), n, uint16_t{0x7e00}); break;   // f16 quiet NaN
    case DType::BF16: std::fill_n(t.data<uint16_t>(), n, uint16_t{0x7fc0}); break;  // bf16 quiet NaN
    case DType::I32:
    case DType::I64:
    case DType::Bool: std::memset(p, 0xa5, t.nbytes()); break;
  }
}

std::vector<int64_t> contiguous_strides(const Shape& s) {
  std::vector<int64_t> st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

bool broadcastable_to(const Shape& in, const Shape& out) {
  if (in.size() > out.size()) return false;
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[lead + i]) return false;
  return true;
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> cs = contiguous_strides(in);
  std::vector<int64_t> st(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) st[lead + i] = in[i] == 1 ? 0 : cs[i];
  return st;
}

Tensor broadcast_to(const Tensor& src, const Shape& shape) {
  Tensor out = new_output(src.dtype(), shape);
  size_t es = dtype_size(src.dtype());
  StridedWalker w(shape, {broadcast_strides(src.shape(), shape)});
  const uint8_t* s = static_cast<const uint8_t*>(src.raw());
  uint8_t* d = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0, n = out.numel(); i < n; ++i, w.next())
    std::memcpy(d + i * es, s + w.offset(0) * es, es);
  return out;
}

int64_t prod(const Shape& s, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= s[i];
  return p;
}

}  // namespace detail
}  // namespace grape::cpu
