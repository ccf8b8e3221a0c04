#include "runtime/tensor.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "base/error.h"
#include "base/half.h"

namespace grape {

int64_t num_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(ErrorCode::OutOfMemory, "tensor shape " + shape_to_string(s) + " has too many elements");
  return n;
}

std::string shape_to_string(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

static void check_shape(DType dtype, const Shape& shape) {
  for (int64_t d : shape)
    if (d < 0) throw Error(ErrorCode::Internal, "negative dimension in shape " + shape_to_string(shape));
  int64_t n = num_elements(shape), bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes))
    throw Error(ErrorCode::OutOfMemory, "tensor shape " + shape_to_string(shape) + " is too large");
}

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)) {
  check_shape(dtype_, shape_);
  // At least one byte so that raw() of an empty tensor is a valid pointer.
  size_t n = std::max<size_t>(1, nbytes());
  storage_ = std::shared_ptr<uint8_t>(new uint8_t[n](), std::default_delete<uint8_t[]>());
}

Tensor Tensor::wrap_device(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  Tensor t = wrap(dtype, std::move(shape), data, std::move(owner));
  t.device_ = data != nullptr;  // an empty tensor has no memory to point at
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  check_shape(dtype, shape);
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  if (data == nullptr) {
    if (t.nbytes() != 0) throw Error(ErrorCode::Internal, "Tensor::wrap: null data for a non-empty tensor");
    return Tensor(dtype, t.shape_);
  }
  // The aliasing constructor: shares ownership with `owner`, points at `data`.
  t.storage_ = std::shared_ptr<uint8_t>(std::move(owner), static_cast<uint8_t*>(data));
  return t;
}

Tensor Tensor::scalar_f32(float v) { Tensor t(DType::F32, {}); t.data<float>()[0] = v; return t; }
Tensor Tensor::scalar_i32(int32_t v) { Tensor t(DType::I32, {}); t.data<int32_t>()[0] = v; return t; }
Tensor Tensor::scalar_i64(int64_t v) { Tensor t(DType::I64, {}); t.data<int64_t>()[0] = v; return t; }
Tensor Tensor::scalar_bool(bool v) { Tensor t(DType::Bool, {}); t.data<uint8_t>()[0] = v; return t; }

double Tensor::get(int64_t i) const {
  switch (dtype_) {
    case DType::F32: return data<float>()[i];
    case DType::F16: return f16_to_f32(data<uint16_t>()[i]);
    case DType::BF16: return bf16_to_f32(data<uint16_t>()[i]);
    case DType::I32: return data<int32_t>()[i];
    case DType::I64: return static_cast<double>(data<int64_t>()[i]);
    case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

static int64_t saturating_int(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(v);
}

void Tensor::set(int64_t i, double v) {
  switch (dtype_) {
    case DType::F32: data<float>()[i] = static_cast<float>(v); break;
    case DType::F16: data<uint16_t>()[i] = f32_to_f16(static_cast<float>(v)); break;
    case DType::BF16: data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(v)); break;
    case DType::I32: data<int32_t>()[i] = static_cast<int32_t>(saturating_int(v, INT32_MIN, INT32_MAX)); break;
    case DType::I64: data<int64_t>()[i] = saturating_int(v, INT64_MIN, INT64_MAX); break;
    case DType::Bool: data<uint8_t>()[i] = v != 0 ? 1 : 0; break;
  }
}

int64_t Tensor::get_int(int64_t i) const {
  switch (dtype_) {
    case DType::I32: return data<int32_t>()[i];
    case DType::I64: return data<int64_t>()[i];
    case DType::Bool: return data<uint8_t>()[i];
    default: return saturating_int(get(i), INT64_MIN, INT64_MAX);
  }
}

void Tensor::set_int(int64_t i, int64_t v) {
  switch (dtype_) {
    case DType::I32: data<int32_t>()[i] = static_cast<int32_t>(v); break;
    case DType::I64: data<int64_t>()[i] = v; break;
    case DType::Bool: data<uint8_t>()[i] = v != 0; break;
    default: set(i, static_cast<double>(v));
  }
}

Tensor Tensor::clone() const {
  if (!defined()) return {};
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (num_elements(shape) != numel())
    throw Error(ErrorCode::Internal, "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::vector<int64_t> Tensor::strides() const {
  std::vector<int64_t> s(shape_.size());
  int64_t acc = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape_[i];
  }
  return s;
}

}  // namespace grape
