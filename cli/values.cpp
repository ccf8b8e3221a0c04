#include "cli/values.h"

#include <cmath>
#include <cstring>

namespace grape::cli {
namespace {

float half_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while (!(man & 0x400u)) {
        man <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Round to nearest even from the double itself (not through float, which would round twice).
uint16_t double_to_half(double v) {
  uint16_t sign = std::signbit(v) ? 0x8000u : 0;
  double a = std::fabs(v);
  if (std::isnan(v)) return sign | 0x7e00u;
  if (a >= 65520.0) return sign | 0x7c00u;  // past the largest half plus half an ulp: infinity
  if (a < std::ldexp(1.0, -14)) {           // subnormal (or zero): units of 2^-24
    double units = std::nearbyint(a * std::ldexp(1.0, 24));
    return sign | static_cast<uint16_t>(units);  // 1024 units rounds up into the smallest normal
  }
  int e;
  double m = std::frexp(a, &e);              // a = m * 2^e, m in [0.5, 1)
  double mant = std::nearbyint(m * 2048.0);  // 11 significant bits
  if (mant == 2048.0) {
    mant = 1024.0;
    ++e;
  }
  int biased = e - 1 + 15;
  if (biased >= 31) return sign | 0x7c00u;
  return sign | static_cast<uint16_t>(biased << 10) |
         static_cast<uint16_t>(static_cast<uint32_t>(mant) & 0x3ffu);
}

uint16_t double_to_bf16(double v) {
  if (std::isnan(v)) return std::signbit(v) ? 0xffc0u : 0x7fc0u;
  // Through float is exact enough here only with the float rounded to odd; do it in integers:
  // round the double to 8 significant bits directly.
  uint16_t sign = std::signbit(v) ? 0x8000u : 0;
  double a = std::fabs(v);
  if (a == 0) return sign;
  if (a < std::ldexp(1.0, -126)) {  // subnormal: units of 2^-133
    double units = std::nearbyint(a * std::ldexp(1.0, 133));
    return sign | static_cast<uint16_t>(units);
  }
  int e;
  double m = std::frexp(a, &e);
  double mant = std::nearbyint(m * 256.0);
  if (mant == 256.0) {
    mant = 128.0;
    ++e;
  }
  int biased = e - 1 + 127;
  if (biased >= 255) return sign | 0x7f80u;
  return sign | static_cast<uint16_t>(biased << 7) |
         static_cast<uint16_t>(static_cast<uint32_t>(mant) & 0x7fu);
}

template <class T>
T read_at(const void* data, size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(data) + i * sizeof v, sizeof v);
  return v;
}

template <class T>
void write_at(void* data, size_t i, T v) {
  std::memcpy(static_cast<char*>(data) + i * sizeof v, &v, sizeof v);
}

}  // namespace

bool is_float_dtype(grp_dtype dtype) { return dtype == GRP_F32 || dtype == GRP_F16 || dtype == GRP_BF16; }

double element(grp_dtype dtype, const void* data, size_t i) {
  switch (dtype) {
    case GRP_F32: return read_at<float>(data, i);
    case GRP_F16: return half_to_float(read_at<uint16_t>(data, i));
    case GRP_BF16: {
      uint32_t bits = static_cast<uint32_t>(read_at<uint16_t>(data, i)) << 16;
      float f;
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case GRP_I32: return read_at<int32_t>(data, i);
    case GRP_I64: return static_cast<double>(read_at<int64_t>(data, i));
    case GRP_BOOL: return read_at<uint8_t>(data, i) ? 1.0 : 0.0;
  }
  return 0;
}

void store_float(grp_dtype dtype, void* data, size_t i, double v) {
  switch (dtype) {
    case GRP_F32: write_at(data, i, static_cast<float>(v)); break;
    case GRP_F16: write_at(data, i, double_to_half(v)); break;
    case GRP_BF16: write_at(data, i, double_to_bf16(v)); break;
    case GRP_I32: write_at(data, i, static_cast<int32_t>(v)); break;
    case GRP_I64: write_at(data, i, static_cast<int64_t>(v)); break;
    case GRP_BOOL: write_at(data, i, static_cast<uint8_t>(v != 0)); break;
  }
}

void store_integer(grp_dtype dtype, void* data, size_t i, int64_t v) {
  switch (dtype) {
    case GRP_I32: write_at(data, i, static_cast<int32_t>(v)); break;
    case GRP_I64: write_at(data, i, v); break;
    case GRP_BOOL: write_at(data, i, static_cast<uint8_t>(v != 0)); break;
    default: store_float(dtype, data, i, static_cast<double>(v)); break;
  }
}

}  // namespace grape::cli
