// A dense, C-ordered, host tensor. Storage is shared (copying a Tensor is cheap and aliases the
// same bytes); `clone()` makes an independent copy. Storage is either allocated by the tensor or
// external memory wrapped without a copy (`wrap`), kept alive by an owner the caller supplies. Element access is through typed pointers or
// the f64 helpers used by reference kernels.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace grape {

using Shape = std::vector<int64_t>;

int64_t num_elements(const Shape& s);
std::string shape_to_string(const Shape& s);  // "[2, 3]"

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (defined() == false)
  Tensor(DType dtype, Shape shape);  // zero-filled
  static Tensor scalar_f32(float v);
  static Tensor scalar_i32(int32_t v);
  static Tensor scalar_i64(int64_t v);
  static Tensor scalar_bool(bool v);
  // Wraps `data` (at least nbytes() bytes, C order) without copying. `owner` is held for as long as
  // any tensor shares the storage (it may be null when the caller guarantees the lifetime).
  // `data` may be null only for an empty tensor.
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  // The same over CUDA device memory (a device pointer of the session's GPU): only the CUDA
  // executors read it (in place, or copied device to device); raw() is the device address and
  // must not be dereferenced on the host.
  static Tensor wrap_device(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  bool on_device() const { return device_; }

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.size(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t numel() const { return num_elements(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return storage_.get(); }
  const void* raw() const { return storage_.get(); }
  template <class T> T* data() { return reinterpret_cast<T*>(raw()); }
  template <class T> const T* data() const { return reinterpret_cast<const T*>(raw()); }

  // Element i (flat, C order) converted to/from double. Works for every dtype (bool: 0/1;
  // f16/bf16 are rounded on store). Slow; for reference kernels and tests.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  // Integer element access without a round trip through double (exact for i64).
  int64_t get_int(int64_t i) const;
  void set_int(int64_t i, int64_t v);

  Tensor clone() const;
  // Same storage, new shape with the same number of elements.
  Tensor reshaped(Shape shape) const;
  // Strides in elements for C order.
  std::vector<int64_t> strides() const;
  // True if both tensors share storage (used for copy-on-write decisions).
  bool shares_storage_with(const Tensor& o) const { return storage_ == o.storage_; }
  long use_count() const { return storage_.use_count(); }

 private:
  DType dtype_ = DType::F32;
  Shape shape_;
  std::shared_ptr<uint8_t> storage_;  // never null for a defined tensor, even when empty
  bool device_ = false;               // wrap_device: storage_ is device memory
};

}  // namespace grape
