#include "runtime/random_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "base/error.h"
#include "runtime/model.h"
#include "runtime/npy.h"
#include "tests/runtime/rt_test_util.h"

namespace grape {
namespace {

uint64_t checksum(const Tensor& t) {
  // FNV-1a over the bytes: pins the exact output so a platform or compiler difference shows.
  return stable_hash(std::string_view(static_cast<const char*>(t.raw()), t.nbytes()));
}

TEST(RandomWeights, StableHashIsFnv1a) {
  EXPECT_EQ(stable_hash(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stable_hash("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(stable_hash("foobar"), 0x85944171f73967e8ull);
}

TEST(RandomWeights, Splitmix64) {
  // The first outputs of splitmix64 seeded with 0 (state += golden, then mix).
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ull), 0xe220a8397b1dcdafull);
  EXPECT_EQ(splitmix64(0x9E3779B97F4A7C15ull * 2), 0x6e789e6aa1b965f4ull);
}

TEST(RandomWeights, DeterministicAndOrderIndependent) {
  Tensor a1 = random_tensor(DType::F32, {4, 8}, 42, "h.0.attn.c_attn.weight");
  Tensor b1 = random_tensor(DType::F32, {16}, 42, "h.0.attn.c_attn.bias");
  Tensor b2 = random_tensor(DType::F32, {16}, 42, "h.0.attn.c_attn.bias");
  Tensor a2 = random_tensor(DType::F32, {4, 8}, 42, "h.0.attn.c_attn.weight");
  EXPECT_EQ(0, std::memcmp(a1.raw(), a2.raw(), a1.nbytes()));
  EXPECT_EQ(0, std::memcmp(b1.raw(), b2.raw(), b1.nbytes()));
  // Values depend on the flat index only: a reshaped or longer tensor shares its prefix.
  Tensor longer = random_tensor(DType::F32, {2, 32}, 42, "h.0.attn.c_attn.weight");
  EXPECT_EQ(0, std::memcmp(a1.raw(), longer.raw(), a1.nbytes()));
  // Other seeds and names differ.
  Tensor c = random_tensor(DType::F32, {4, 8}, 43, "h.0.attn.c_attn.weight");
  Tensor d = random_tensor(DType::F32, {4, 8}, 42, "h.1.attn.c_attn.weight");
  EXPECT_NE(0, std::memcmp(a1.raw(), c.raw(), a1.nbytes()));
  EXPECT_NE(0, std::memcmp(a1.raw(), d.raw(), a1.nbytes()));
}

TEST(RandomWeights, PinnedValues) {
  // Golden checksums: these must never change across platforms, compilers or releases (weights
  // generated from a seed are part of reproducible benchmarks and tests).
  EXPECT_EQ(checksum(random_tensor(DType::F32, {1000}, 0, "w")), 0x114e2123ae4cb07eull);
  EXPECT_EQ(checksum(random_tensor(DType::F16, {1000}, 1, "x.weight")), 0xcce67cf4ee524a97ull);
  EXPECT_EQ(checksum(random_tensor(DType::BF16, {10, 100}, 2, "emb")), 0xdf219e16b9a7aaa3ull);
  EXPECT_EQ(checksum(random_tensor(DType::I64, {1000}, 3, "ids")), 0xfee4aafa9c29f985ull);
  EXPECT_EQ(checksum(random_tensor(DType::Bool, {1000}, 4, "mask")), 0xff3c01b3d6bc2c25ull);
}

TEST(RandomWeights, FloatDistribution) {
  Tensor t = random_tensor(DType::F32, {200000}, 7, "wte.weight_matrix");
  double sum = 0, sq = 0, mx = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double v = t.get(i);
    sum += v;
    sq += v * v;
    mx = std::max(mx, std::fabs(v));
  }
  double mean = sum / static_cast<double>(t.numel());
  double std = std::sqrt(sq / static_cast<double>(t.numel()) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.0005);
  EXPECT_NEAR(std, kRandomWeightStd, 0.0005);
  EXPECT_LE(mx, 3.5 * kRandomWeightStd);
  EXPECT_GT(mx, 2.5 * kRandomWeightStd);
}

TEST(RandomWeights, NormGainsAreNearOne) {
  Tensor g = random_tensor(DType::F32, {768}, 1, "h.0.ln_1.weight");
  Tensor b = random_tensor(DType::F32, {768}, 1, "h.0.ln_1.bias");
  Tensor w2d = random_tensor(DType::F32, {2, 384}, 1, "h.0.mlp.weight");
  double gs = 0, bs = 0, ws = 0;
  for (int64_t i = 0; i < 768; ++i) {
    EXPECT_NEAR(g.get(i), 1.0, 0.08);
    gs += g.get(i);
    bs += b.get(i);
    ws += w2d.get(i);
  }
  EXPECT_NEAR(gs / 768, 1.0, 0.01);
  EXPECT_NEAR(bs / 768, 0.0, 0.01);
  EXPECT_NEAR(ws / 768, 0.0, 0.01);
  Tensor h = random_tensor(DType::F16, {768}, 1, "h.0.ln_1.weight");
  for (int64_t i = 0; i < 768; ++i) EXPECT_NEAR(h.get(i), g.get(i), 1e-3);
}

TEST(RandomWeights, IntsAndBools) {
  Tensor i = random_tensor(DType::I32, {10000}, 5, "ids");
  Tensor l = random_tensor(DType::I64, {10000}, 5, "ids");
  int seen[16] = {};
  for (int64_t k = 0; k < 10000; ++k) {
    int64_t v = i.get_int(k);
    ASSERT_GE(v, 0);
    ASSERT_LT(v, 16);
    ++seen[v];
    EXPECT_EQ(l.get_int(k), v);  // same (seed, name, index) -> same value
  }
  for (int v = 0; v < 16; ++v) EXPECT_GT(seen[v], 450) << v;
  Tensor b = random_tensor(DType::Bool, {10000}, 5, "mask");
  int64_t ones = 0;
  for (int64_t k = 0; k < 10000; ++k) {
    ASSERT_LE(b.data<uint8_t>()[k], 1);
    ones += b.data<uint8_t>()[k];
  }
  EXPECT_NEAR(static_cast<double>(ones), 5000.0, 300.0);
}

TEST(RandomWeights, ScalarsEmptyAndErrors) {
  EXPECT_EQ(random_tensor(DType::F32, {}, 1, "s").numel(), 1);
  EXPECT_EQ(random_tensor(DType::F32, {0, 4}, 1, "e").numel(), 0);
  try {
    random_tensor(DType::F32, {-1}, 1, "bad");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'bad'"), std::string::npos);
  }
}

// An independent implementation of the documented formula (Python integers + IEEE doubles) gives
// bit-identical values: the generator is exactly what random_weights.h documents.
TEST(RandomWeightsPython, MatchesDocumentedFormula) {
  GRAPE_REQUIRE_PYTHON();
  testing::TempDir dir;
  write_npy(dir.file("w.npy"), random_tensor(DType::F32, {3, 50}, 1234, "h.3.mlp.c_fc.weight"));
  write_npy(dir.file("g.npy"), random_tensor(DType::F32, {40}, 99, "ln_f.weight"));
  write_npy(dir.file("i.npy"), random_tensor(DType::I64, {40}, 7, "ids"));
  write_npy(dir.file("b.npy"), random_tensor(DType::Bool, {40}, 7, "mask"));
  auto r = testing::run_python(dir, R"PY(
import numpy as np
M = 2**64 - 1
def mix(x):
    x ^= x >> 30; x = (x * 0xbf58476d1ce4e5b9) & M
    x ^= x >> 27; x = (x * 0x94d049bb133111eb) & M
    return x ^ (x >> 31)
def fnv(s):
    h = 0xcbf29ce484222325
    for b in s.encode():
        h = ((h ^ b) * 0x100000001b3) & M
    return h
def bits(seed, name, n):
    key = mix(mix(seed) ^ fnv(name))
    return [mix((key + (i + 1) * 0x9E3779B97F4A7C15) & M) for i in range(n)]
def floats(seed, name, n, gain):
    out = []
    for b in bits(seed, name, n):
        s = (b & 0xffff) + ((b >> 16) & 0xffff) + ((b >> 32) & 0xffff) + (b >> 48) - 2 * 65535
        v = np.float32(s * (0.02 / 37837.22723720648))
        out.append(np.float32(1) + v if gain else v)
    return np.array(out, dtype=np.float32)
np.testing.assert_array_equal(np.load("w.npy").ravel().view(np.uint32), floats(1234, "h.3.mlp.c_fc.weight", 150, False).view(np.uint32))
np.testing.assert_array_equal(np.load("g.npy").view(np.uint32), floats(99, "ln_f.weight", 40, True).view(np.uint32))
np.testing.assert_array_equal(np.load("i.npy"), [b >> 60 for b in bits(7, "ids", 40)])
np.testing.assert_array_equal(np.load("b.npy"), [b >> 63 == 1 for b in bits(7, "mask", 40)])
print("ok")
)PY");
  EXPECT_EQ(r.rc, 0) << r.output;
}

// A weight too big to allocate is named, with its size and declaration, not a bare "out of memory".
// (Not under AddressSanitizer: it aborts on such an allocation instead of failing it.)
TEST(RandomWeights, TooBigToAllocateNamesTheWeight) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer aborts on impossible allocations";
#endif
#endif
  ModelOptions o;
  o.limits.max_tensor_elements = int64_t{1} << 62;
  o.limits.max_program_elements = int64_t{1} << 62;
  auto m = Model::load_source(
      "weights {\n  w: i64[17592186044416]\n}\nfn main(x: f32[1]) -> f32[1] { return x }\n", "big.grp", o);
  try {
    m->set_random_weights(1);
    FAIL() << "a 128 TiB weight was allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find(
                  "random weight 'w' (i64[17592186044416], 140737488355328 bytes; declared at "
                  "big.grp:2:3)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace grape
