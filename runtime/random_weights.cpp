#include "runtime/random_weights.h"

#include <stdexcept>

#include "base/error.h"
#include "base/half.h"

namespace grape {

uint64_t stable_hash(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t splitmix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

namespace {

// Four 16-bit uniforms U_k in [0, 65536): S = sum - 2 * 65535 is symmetric around 0 with
// variance 4 * (65536^2 - 1) / 12; scaled so that the standard deviation is kRandomWeightStd.
// The scale is a compile-time constant, so the value is one exact int->double conversion and one
// correctly rounded multiplication: bit-identical everywhere.
constexpr double kIrwinHallStd = 37837.22723720648;  // sqrt(4 * (65536^2 - 1) / 12)
constexpr double kScale = kRandomWeightStd / kIrwinHallStd;

float noise(uint64_t bits) {
  int64_t s = static_cast<int64_t>(bits & 0xffff) + static_cast<int64_t>((bits >> 16) & 0xffff) +
              static_cast<int64_t>((bits >> 32) & 0xffff) + static_cast<int64_t>(bits >> 48) - 2 * 65535;
  double v = static_cast<double>(s) * kScale;
  return static_cast<float>(v);
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

Tensor random_tensor(DType dtype, const Shape& shape, uint64_t seed, const std::string& name) {
  for (int64_t d : shape)
    if (d < 0)
      throw Error(ErrorCode::InvalidArgument, "random_tensor: tensor '" + name + "' has a negative dimension in shape " +
                                                  shape_to_string(shape));
  Tensor t(dtype, shape);
  const uint64_t key = splitmix64(splitmix64(seed) ^ stable_hash(name));
  const bool gain = shape.size() == 1 && ends_with(name, "weight");
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits = splitmix64(key + static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull);
    switch (dtype) {
      case DType::F32: case DType::F16: case DType::BF16: {
        float v = noise(bits);
        if (gain) v = 1.0f + v;
        if (dtype == DType::F32) t.data<float>()[i] = v;
        else if (dtype == DType::F16) t.data<uint16_t>()[i] = f32_to_f16(v);
        else t.data<uint16_t>()[i] = f32_to_bf16(v);
        break;
      }
      case DType::I32: t.data<int32_t>()[i] = static_cast<int32_t>(bits >> 60); break;
      case DType::I64: t.data<int64_t>()[i] = static_cast<int64_t>(bits >> 60); break;
      case DType::Bool: t.data<uint8_t>()[i] = static_cast<uint8_t>(bits >> 63); break;
    }
  }
  return t;
}

}  // namespace grape
