// What the C API's translation units share: the handle layouts, the exception firewall, and the
// conversions between C arguments and runtime types (each validating and naming the argument).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "grape.h"
#include "base/error.h"
#include "runtime/model.h"
#include "runtime/tensor.h"

struct grp_error {
  grp_code code = GRP_ERR_INTERNAL;
  std::string message;
  bool has_location = false;
  std::string file;
  uint32_t line = 0, column = 0;
  bool is_static = false;  // the preallocated out-of-memory error: never deleted
};

struct grp_model {
  std::shared_ptr<grape::Model> model;
  std::vector<std::string> entries;
  std::vector<grape::TensorSignature> weights;
  std::vector<std::vector<int64_t>> weight_shapes;
};

struct grp_tensor {
  grape::Tensor value;
};

namespace grape::capi {

// The error for the exception being handled (call only inside a catch block). Never throws.
grp_error* error_from_current_exception() noexcept;

// The exception firewall: runs `body`, turning every exception into a grp_error*.
template <class F>
grp_error* guard(F&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (...) {
    return error_from_current_exception();
  }
}

[[noreturn]] void invalid(const std::string& message);
void require(const void* p, const char* what);  // InvalidArgument "<what> is NULL"

// A grp_dtype arrives from C and may hold any int: it is read through its bytes (loading an
// out-of-range enum value in C++ is undefined), never copied as a grp_dtype before this check.
int dtype_value(const grp_dtype* d);
DType to_dtype(const grp_dtype* d, const std::string& what);
grp_dtype from_dtype(DType d);
// The shape as given (rank > 0 needs a non-NULL pointer; no negative dims; element count and
// byte size must not overflow). `what` names the argument in errors.
Shape to_shape(const int64_t* shape, size_t rank, DType dtype, const std::string& what);
// Checks that nbytes and data fit the dtype and shape.
void check_bytes(DType dtype, const Shape& shape, const void* data, size_t nbytes, const std::string& what);

// Copies `s` into memory from malloc (released with grp_free).
char* dup_string(const std::string& s);

}  // namespace grape::capi
