// Element types shared by the IR and the runtime.
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace grape {

enum class DType { F32, F16, BF16, I32, I64, Bool };

const char* dtype_name(DType t);                           // "f32", ...
std::optional<DType> parse_dtype(std::string_view name);  // nullopt if not a dtype name
size_t dtype_size(DType t);                                // bytes per element
inline bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }
inline bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

}  // namespace grape
