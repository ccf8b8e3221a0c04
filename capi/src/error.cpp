// Errors, versions, dtypes and the exception firewall.
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "capi/src/internal.h"
#include "ir/dtype.h"
#include "jit/cuda_driver.h"

namespace grape::capi {
namespace {

// Returned when allocating an error object fails. Never freed.
grp_error* out_of_memory_error() noexcept {
  static grp_error e = [] {
    grp_error x;
    x.code = GRP_ERR_OUT_OF_MEMORY;
    x.message = "out of memory";
    x.is_static = true;
    return x;
  }();
  return &e;
}

grp_code to_code(ErrorCode c) {
  switch (c) {
    case ErrorCode::InvalidArgument: return GRP_ERR_INVALID_ARGUMENT;
    case ErrorCode::Syntax: return GRP_ERR_SYNTAX;
    case ErrorCode::Type: return GRP_ERR_TYPE;
    case ErrorCode::IO: return GRP_ERR_IO;
    case ErrorCode::Format: return GRP_ERR_FORMAT;
    case ErrorCode::Unsupported: return GRP_ERR_UNSUPPORTED;
    case ErrorCode::NoDevice: return GRP_ERR_NO_DEVICE;
    case ErrorCode::Device: return GRP_ERR_DEVICE;
    case ErrorCode::OutOfMemory: return GRP_ERR_OUT_OF_MEMORY;
    case ErrorCode::Internal: return GRP_ERR_INTERNAL;
    case ErrorCode::Interrupted: return GRP_ERR_INTERRUPTED;
  }
  return GRP_ERR_INTERNAL;
}

grp_error* make(grp_code code, const char* message) noexcept {
  try {
    auto e = std::make_unique<grp_error>();
    e->code = code;
    e->message = message;
    return e.release();
  } catch (...) {
    return out_of_memory_error();
  }
}

}  // namespace

grp_error* error_from_current_exception() noexcept {
  try {
    throw;
  } catch (const SourceError& se) {
    grp_error* e = make(to_code(se.code()), se.what());
    if (e->is_static) return e;
    try {
      e->file = se.file();
      e->line = static_cast<uint32_t>(se.line());
      e->column = static_cast<uint32_t>(se.column());
      e->has_location = true;
    } catch (...) {
      e->has_location = false;
    }
    return e;
  } catch (const Error& ge) {
    return make(to_code(ge.code()), ge.what());
  } catch (const std::bad_alloc&) {
    return out_of_memory_error();
  } catch (const std::exception& ex) {
    try {
      return make(GRP_ERR_INTERNAL, (std::string("internal error: ") + ex.what()).c_str());
    } catch (...) {
      return out_of_memory_error();
    }
  } catch (...) {
    return make(GRP_ERR_INTERNAL, "internal error: unknown exception");
  }
}

void invalid(const std::string& message) { throw Error(ErrorCode::InvalidArgument, message); }

void require(const void* p, const char* what) {
  if (p == nullptr) invalid(std::string(what) + " is NULL");
}

int dtype_value(const grp_dtype* d) {
  std::underlying_type_t<grp_dtype> v;
  static_assert(sizeof v == sizeof *d);
  std::memcpy(&v, d, sizeof v);
  return static_cast<int>(v);
}

DType to_dtype(const grp_dtype* d, const std::string& what) {
  switch (dtype_value(d)) {
    case GRP_F32: return DType::F32;
    case GRP_F16: return DType::F16;
    case GRP_BF16: return DType::BF16;
    case GRP_I32: return DType::I32;
    case GRP_I64: return DType::I64;
    case GRP_BOOL: return DType::Bool;
  }
  invalid(what + ": " + std::to_string(dtype_value(d)) + " is not a grp_dtype");
}

grp_dtype from_dtype(DType d) {
  switch (d) {
    case DType::F32: return GRP_F32;
    case DType::F16: return GRP_F16;
    case DType::BF16: return GRP_BF16;
    case DType::I32: return GRP_I32;
    case DType::I64: return GRP_I64;
    case DType::Bool: return GRP_BOOL;
  }
  return GRP_F32;
}

Shape to_shape(const int64_t* shape, size_t rank, DType dtype, const std::string& what) {
  if (rank > 0 && shape == nullptr) invalid(what + ": shape is NULL but rank is " + std::to_string(rank));
  if (rank > 64) invalid(what + ": rank " + std::to_string(rank) + " is too large");
  Shape s(shape, shape + rank);
  int64_t n = 1;
  for (size_t k = 0; k < rank; ++k) {
    if (s[k] < 0) invalid(what + ": shape[" + std::to_string(k) + "] is " + std::to_string(s[k]));
    if (__builtin_mul_overflow(n, s[k], &n))
      invalid(what + ": shape " + shape_to_string(s) + " is too large");
  }
  int64_t bytes;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes))
    invalid(what + ": shape " + shape_to_string(s) + " is too large");
  return s;
}

void check_bytes(DType dtype, const Shape& shape, const void* data, size_t nbytes, const std::string& what) {
  size_t want = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  if (nbytes != want)
    invalid(what + ": " + std::to_string(nbytes) + " bytes given, but " + dtype_name(dtype) +
            shape_to_string(shape) + " needs " + std::to_string(want));
  if (data == nullptr && nbytes > 0) invalid(what + ": data is NULL");
}

char* dup_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace grape::capi

using namespace grape;

extern "C" {

uint32_t grp_version_number(void) { return GRAPE_VERSION_NUMBER; }
const char* grp_version_string(void) { return GRAPE_VERSION_STRING; }

grp_code grp_error_code(const grp_error* e) { return e ? e->code : GRP_OK; }
const char* grp_error_message(const grp_error* e) { return e ? e->message.c_str() : ""; }

int grp_error_location(const grp_error* e, const char** file, uint32_t* line, uint32_t* column) {
  if (!e || !e->has_location) return 0;
  if (file) *file = e->file.c_str();
  if (line) *line = e->line;
  if (column) *column = e->column;
  return 1;
}

void grp_error_free(grp_error* e) {
  if (e && !e->is_static) delete e;
}

void grp_free(void* p) { std::free(p); }

size_t grp_dtype_size(grp_dtype d) {
  switch (grape::capi::dtype_value(&d)) {
    case GRP_F32: return 4;
    case GRP_F16: return 2;
    case GRP_BF16: return 2;
    case GRP_I32: return 4;
    case GRP_I64: return 8;
    case GRP_BOOL: return 1;
  }
  return 0;
}

const char* grp_dtype_name(grp_dtype d) {
  switch (grape::capi::dtype_value(&d)) {
    case GRP_F32: return "f32";
    case GRP_F16: return "f16";
    case GRP_BF16: return "bf16";
    case GRP_I32: return "i32";
    case GRP_I64: return "i64";
    case GRP_BOOL: return "bool";
  }
  return "";
}

int grp_backend_available(const char* backend) {
  if (!backend) return 0;
  std::string b = backend;
  if (b == "cpu" || b == "auto") return 1;
  if (b != "cuda") return 0;
  try {
    return grape::jit::driver_available(nullptr) && grape::jit::Device::count() > 0 ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
