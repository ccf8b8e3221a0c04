// base/half.h against numpy (f16) and against an independent arithmetic reference (f16, bf16).
#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/npy.h"
#include "tests/runtime/rt_test_util.h"

namespace grape {
namespace {

uint32_t bits_of(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float float_of(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round x to a binary format with `mant_bits` explicit mantissa bits and minimum normal exponent
// `emin` (value = 1.m * 2^e), round to nearest even, using double arithmetic only (exact: every
// step is a scaling by a power of two or std::nearbyint in the default rounding mode).
double reference_round(double x, int mant_bits, int emin, double max_finite) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  int e;
  std::frexp(x, &e);  // x = m * 2^e, 0.5 <= |m| < 1, so the leading bit has weight 2^(e-1)
  int quantum_exp = std::max(e - 1, emin) - mant_bits;
  double q = std::nearbyint(std::ldexp(x, -quantum_exp));
  double r = std::ldexp(q, quantum_exp);
  // Round to nearest even at the top: anything at or above max + half an ulp becomes infinity,
  // which is exactly what rounding produces when it reaches 2^(emax+1).
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r;
}

double ref_f16(float f) { return reference_round(f, 10, -14, 65504.0); }
double ref_bf16(float f) { return reference_round(f, 7, -126, static_cast<double>(float_of(0x7f7f0000u))); }

// Values worth testing: every exponent with mantissa patterns around f16/bf16 rounding points.
std::vector<float> probe_values() {
  std::vector<float> v;
  const uint32_t lows[] = {0x0, 0x1, 0xfff, 0x1000, 0x1001, 0x1fff, 0x2000, 0x3000, 0x7fff, 0x8000, 0x8001, 0xffff, 0x12345};
  for (uint32_t hi = 0; hi < 0x10000u; ++hi) {
    for (uint32_t lo : lows) {
      uint32_t u = (hi << 16) | (lo & 0xffffu);
      v.push_back(float_of(u));
      v.push_back(float_of((hi << 16) ^ (lo << 3)));
    }
  }
  uint64_t s = 12345;
  for (int i = 0; i < 200000; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    v.push_back(float_of(static_cast<uint32_t>(s >> 32)));
  }
  return v;
}

TEST(Half, F16ToF32AllValuesExact) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double expect;
    if (e == 31) {
      if (m == 0) {
        EXPECT_TRUE(std::isinf(f)) << h;
      } else {
        EXPECT_TRUE(std::isnan(f)) << h;
      }
      continue;
    }
    expect = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, static_cast<int>(e) - 25);
    if (h & 0x8000) expect = -expect;
    ASSERT_EQ(static_cast<double>(f), expect) << std::hex << h;
    EXPECT_EQ(std::signbit(f), (h & 0x8000) != 0) << h;
    // Round trip is exact.
    ASSERT_EQ(f32_to_f16(f), h) << std::hex << h;
  }
}

TEST(Half, F32ToF16MatchesArithmeticReference) {
  for (float f : probe_values()) {
    uint16_t h = f32_to_f16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(h))) << bits_of(f);
      continue;
    }
    double got = f16_to_f32(h);
    ASSERT_EQ(got, ref_f16(f)) << "f32 bits 0x" << std::hex << bits_of(f);
    ASSERT_EQ(std::signbit(got), std::signbit(f));
  }
}

TEST(Half, F32ToBf16MatchesArithmeticReference) {
  for (float f : probe_values()) {
    uint16_t h = f32_to_bf16(f);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(h))) << bits_of(f);
      EXPECT_EQ(h & 0x8000u, (bits_of(f) >> 16) & 0x8000u);
      continue;
    }
    double got = bf16_to_f32(h);
    ASSERT_EQ(got, ref_bf16(f)) << "f32 bits 0x" << std::hex << bits_of(f);
    ASSERT_EQ(std::signbit(got), std::signbit(f));
  }
  // Every bf16 round-trips.
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(f32_to_bf16(f), h);
  }
}

TEST(Half, F16EdgeCases) {
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // tie rounds to even = infinity
  EXPECT_EQ(f32_to_f16(-std::numeric_limits<float>::infinity()), 0xfc00);
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -24)), 0x0001);     // smallest subnormal
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);     // tie to even (0)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 * 2^-24: tie to even (2)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -14)), 0x0400);     // smallest normal
  EXPECT_EQ(f32_to_f16(std::ldexp(1023.5f, -24)), 0x0400);  // largest subnormal + half ulp: rounds up to normal
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie, even stays
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(3.0f, -11)), 0x3c02);  // tie, odd rounds up
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(float_of(0x7f800001u)))));  // signalling NaN stays NaN
}

TEST(Half, Bf16EdgeCases) {
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(f32_to_bf16(float_of(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(f32_to_bf16(float_of(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(f32_to_bf16(float_of(0x7f7fffffu)), 0x7f80);  // max float rounds to infinity
  EXPECT_EQ(f32_to_bf16(float_of(0x00000001u)), 0x0000);  // tiny subnormal
  EXPECT_EQ(f32_to_bf16(float_of(0x00008000u)), 0x0000);  // tie to even
  EXPECT_EQ(f32_to_bf16(float_of(0x00018000u)), 0x0002);
  EXPECT_EQ(f32_to_bf16(float_of(0xff800000u)), 0xff80);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(float_of(0x7f800001u)))));  // NaN with low payload only
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(float_of(0xffc00000u)))));
}

// numpy's float16 conversions as the reference (both directions, exact bits).
TEST(HalfPython, MatchesNumpyFloat16) {
  GRAPE_REQUIRE_PYTHON();
  testing::TempDir dir;
  std::vector<float> probes = probe_values();
  Tensor in(DType::F32, {static_cast<int64_t>(probes.size())});
  std::memcpy(in.raw(), probes.data(), probes.size() * 4);
  write_npy(dir.file("in.npy"), in);
  auto r = testing::run_python(dir, R"PY(
import numpy as np
x = np.load("in.npy")
with np.errstate(all="ignore"):
    np.save("to_f16.npy", x.astype(np.float16))
np.save("all_f16_to_f32.npy", np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32))
print("ok")
)PY");
  ASSERT_EQ(r.rc, 0) << r.output;
  Tensor to16 = read_npy(dir.file("to_f16.npy"));
  ASSERT_EQ(to16.numel(), static_cast<int64_t>(probes.size()));
  int mismatches = 0;
  for (size_t i = 0; i < probes.size(); ++i) {
    uint16_t want = to16.data<uint16_t>()[i], got = f32_to_f16(probes[i]);
    if (std::isnan(probes[i])) {
      // numpy keeps NaN payload bits; Grape returns a quiet NaN of the same sign.
      EXPECT_TRUE((got & 0x7c00) == 0x7c00 && (got & 0x3ff) != 0);
      EXPECT_EQ(got & 0x8000, want & 0x8000);
      continue;
    }
    if (want != got && ++mismatches < 10)
      ADD_FAILURE() << "f32 0x" << std::hex << bits_of(probes[i]) << ": numpy 0x" << want << ", grape 0x" << got;
  }
  EXPECT_EQ(mismatches, 0);
  Tensor all = read_npy(dir.file("all_f16_to_f32.npy"));
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    float want = all.data<float>()[h], got = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(want)) {
      ASSERT_TRUE(std::isnan(got)) << h;
      EXPECT_EQ(bits_of(got), bits_of(want)) << "NaN payload for f16 0x" << std::hex << h;
    } else {
      ASSERT_EQ(bits_of(got), bits_of(want)) << "f16 0x" << std::hex << h;
    }
  }
}

}  // namespace
}  // namespace grape
