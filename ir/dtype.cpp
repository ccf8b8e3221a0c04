#include "ir/dtype.h"

namespace grape {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view n) {
  if (n == "f32") return DType::F32;
  if (n == "f16") return DType::F16;
  if (n == "bf16") return DType::BF16;
  if (n == "i32") return DType::I32;
  if (n == "i64") return DType::I64;
  if (n == "bool") return DType::Bool;
  return std::nullopt;
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: case DType::I32: return 4;
    case DType::F16: case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}

}  // namespace grape
