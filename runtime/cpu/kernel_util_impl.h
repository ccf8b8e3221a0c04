// Internal helpers shared by the CPU reference kernels (runtime/cpu/*.cpp): error reporting,
// element loads/stores, strided iteration and the per-family entry points run_kernel dispatches to.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/cpu/kernels.h"
#include "base/half.h"

namespace grape::cpu::detail {

[[noreturn]] inline void fail(ir::Op op, const std::string& msg) {
  throw KernelError(std::string(ir::op_name(op)) + ": " + msg);
}

inline std::string shp(const Tensor& t) { return shape_to_string(t.shape()); }

// A kernel's result, to be written in full. Builds without NDEBUG (the sanitizer test build, the
// fuzzers) fill it with poison — NaN for floats, 0xA5 bytes for integers and bools — instead of
// zeros, so that a kernel that leaves an element unwritten gives a visibly wrong answer in the
// tests rather than a zero that may pass: the CPU reference is the oracle of the GPU kernels,
// whose buffers are not zeroed either. Release builds keep the (cheaper) zero fill.
Tensor new_output(DType dtype, Shape shape);
// Fills `t` with that poison (whatever the build).
void poison(Tensor& t);

// Element i as float (exact for every float dtype; ints and bool converted).
inline float load_f(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::F32: return t.data<float>()[i];
    case DType::F16: return f16_to_f32(t.data<uint16_t>()[i]);
    case DType::BF16: return bf16_to_f32(t.data<uint16_t>()[i]);
    case DType::I32: return static_cast<float>(t.data<int32_t>()[i]);
    case DType::I64: return static_cast<float>(t.data<int64_t>()[i]);
    case DType::Bool: return t.data<uint8_t>()[i] ? 1.0f : 0.0f;
  }
  return 0;
}

// Stores a float into a float tensor, rounding to f16/bf16 (round to nearest even).
inline void store_f(Tensor& t, int64_t i, float v) {
  switch (t.dtype()) {
    case DType::F32: t.data<float>()[i] = v; break;
    case DType::F16: t.data<uint16_t>()[i] = f32_to_f16(v); break;
    case DType::BF16: t.data<uint16_t>()[i] = f32_to_bf16(v); break;
    default: t.set(i, v);
  }
}

// double -> float rounding toward zero with a sticky low bit ("round to odd"). Rounding that
// float again to f16/bf16 (which have far fewer mantissa bits) then gives the correctly rounded
// result of the double, avoiding double-rounding errors.
inline float round_to_odd_f32(double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || static_cast<double>(f) == v) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  bits |= 1u;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Stores a double accumulated value into a float tensor, correctly rounded to its dtype.
inline void store_d(Tensor& t, int64_t i, double v) {
  switch (t.dtype()) {
    case DType::F32: t.data<float>()[i] = static_cast<float>(v); break;
    case DType::F16: t.data<uint16_t>()[i] = f32_to_f16(round_to_odd_f32(v)); break;
    case DType::BF16: t.data<uint16_t>()[i] = f32_to_bf16(round_to_odd_f32(v)); break;
    default: t.set(i, v);
  }
}

// Integer/bool element access (i32 stores wrap modulo 2^32).
inline int64_t load_i(const Tensor& t, int64_t i) { return t.get_int(i); }
inline void store_i(Tensor& t, int64_t i, int64_t v) { t.set_int(i, v); }

// Wrapping int64 arithmetic (no signed-overflow UB).
inline int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
inline int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
inline int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// Walks the elements of an N-d index space in C order while keeping, for each of several
// operands, a flat offset computed from per-operand strides (0 on broadcast axes).
class StridedWalker {
 public:
  StridedWalker(Shape shape, std::vector<std::vector<int64_t>> strides, std::vector<int64_t> base = {})
      : shape_(std::move(shape)), strides_(std::move(strides)), idx_(shape_.size(), 0) {
    off_ = base.empty() ? std::vector<int64_t>(strides_.size(), 0) : std::move(base);
  }
  int64_t offset(size_t k) const { return off_[k]; }
  const std::vector<int64_t>& index() const { return idx_; }
  void next() {
    for (size_t d = shape_.size(); d-- > 0;) {
      ++idx_[d];
      for (size_t k = 0; k < strides_.size(); ++k) off_[k] += strides_[k][d];
      if (idx_[d] < shape_[d]) return;
      for (size_t k = 0; k < strides_.size(); ++k) off_[k] -= strides_[k][d] * shape_[d];
      idx_[d] = 0;
    }
  }

 private:
  Shape shape_;
  std::vector<std::vector<int64_t>> strides_;
  std::vector<int64_t> idx_;
  std::vector<int64_t> off_;
};

// C-order strides of a shape, in elements.
std::vector<int64_t> contiguous_strides(const Shape& s);
// Strides for reading a tensor of shape `in` as if broadcast to `out` (right-aligned; 0 where
// `in` has size 1 or lacks the axis). `in` must be broadcastable to `out`.
std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out);
// True if `in` can be broadcast to `out` (NumPy broadcast_to rules).
bool broadcastable_to(const Shape& in, const Shape& out);
// Copies `src` broadcast to `shape` into a new contiguous tensor.
Tensor broadcast_to(const Tensor& src, const Shape& shape);

// Product of dims [begin, end).
int64_t prod(const Shape& s, size_t begin, size_t end);

// Family entry points (arity already checked by run_kernel).
std::vector<Tensor> run_elementwise(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_reduce(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_norm(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_linalg(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_shape(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_gather(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);
std::vector<Tensor> run_create(ir::Op op, const std::vector<Tensor>& in, const KernelAttrs& a);

}  // namespace grape::cpu::detail
