// Shape buckets (runtime/shape_buckets.h): the default power-of-two rule, exact and edge rules,
// values beyond the last edge, the bucket keys graphs and auto decisions are filed under, and the
// spec parser's errors. No GPU involved.
#include "runtime/shape_buckets.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "base/error.h"

namespace grape {
namespace {

std::string range(const DimBucket& b) { return std::to_string(b.lo) + ".." + std::to_string(b.hi); }

TEST(ShapeBuckets, Pow2IsTheDefaultAndGivesElevenBucketsUpTo1024) {
  ShapeBuckets b;
  EXPECT_EQ(range(b.bucket("S", 1)), "1..1");
  EXPECT_EQ(range(b.bucket("S", 2)), "2..2");
  EXPECT_EQ(range(b.bucket("S", 3)), "3..4");
  EXPECT_EQ(range(b.bucket("S", 4)), "3..4");
  EXPECT_EQ(range(b.bucket("S", 5)), "5..8");
  EXPECT_EQ(range(b.bucket("S", 513)), "513..1024");
  EXPECT_EQ(range(b.bucket("S", 1024)), "513..1024");
  EXPECT_EQ(range(b.bucket("S", 1025)), "1025..2048");
  EXPECT_EQ(range(b.bucket("S", 0)), "0..0");
  std::set<std::string> keys;
  for (int64_t s = 1; s <= 1024; ++s) {
    DimBucket d = b.bucket("S", s);
    EXPECT_LE(d.lo, s);
    EXPECT_GE(d.hi, s);
    keys.insert(b.key({{"S", s}}));
  }
  EXPECT_EQ(keys.size(), 11u);
}

TEST(ShapeBuckets, KeysNameEveryDimAndEqualExactlyWithinABucket) {
  ShapeBuckets b;
  EXPECT_EQ(b.key({}), "");
  EXPECT_EQ(b.key({{"B", 1}, {"S", 40}}), "B=1, S=33..64");
  EXPECT_EQ(b.key({{"B", 1}, {"S", 40}}), b.key({{"B", 1}, {"S", 64}}));
  EXPECT_NE(b.key({{"B", 1}, {"S", 40}}), b.key({{"B", 2}, {"S", 40}}));
  EXPECT_NE(b.key({{"B", 1}, {"S", 32}}), b.key({{"B", 1}, {"S", 33}}));
}

TEST(ShapeBuckets, ExactAndEdgeRules) {
  ShapeBuckets b = ShapeBuckets::parse("S=exact; T=16,64,256");
  EXPECT_EQ(range(b.bucket("S", 37)), "37..37");
  EXPECT_EQ(range(b.bucket("T", 1)), "1..16");
  EXPECT_EQ(range(b.bucket("T", 16)), "1..16");
  EXPECT_EQ(range(b.bucket("T", 17)), "17..64");
  EXPECT_EQ(range(b.bucket("T", 256)), "65..256");
  // Beyond the last edge: powers of two above it, never an error.
  EXPECT_EQ(range(b.bucket("T", 257)), "257..512");
  EXPECT_EQ(range(b.bucket("T", 600)), "513..1024");
  EXPECT_EQ(range(b.bucket("U", 6)), "5..8");  // not named: pow2
  EXPECT_EQ(b.spec(), "S=exact;T=16,64,256");
  EXPECT_EQ(ShapeBuckets::parse("S=pow2").spec(), "");
  EXPECT_EQ(ShapeBuckets::parse("").spec(), "");
  // An edge that is not a power of two starts the pow2 buckets above it.
  EXPECT_EQ(range(ShapeBuckets::parse("S=100").bucket("S", 120)), "101..128");
}

TEST(ShapeBuckets, BadSpecsNameWhatIsWrong) {
  auto message = [](const std::string& spec) {
    try {
      ShapeBuckets::parse(spec);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("S").find("expected NAME=pow2"), std::string::npos) << message("S");
  EXPECT_NE(message("S=16,8").find("the edges of S must increase"), std::string::npos);
  EXPECT_NE(message("S=0").find("positive edges"), std::string::npos);
  EXPECT_NE(message("S=pow3").find("must be pow2, exact or positive edges"), std::string::npos);
  EXPECT_NE(message("S=1,,4").find("positive edges"), std::string::npos);
  EXPECT_NE(message("S=exact;S=pow2").find("dim S is named twice"), std::string::npos);
  EXPECT_NE(message("1S=exact").find("is not a dim name"), std::string::npos);
  EXPECT_NE(message("S=99999999999999999999").find("positive edges"), std::string::npos);
  EXPECT_EQ(message("S=4"), "no error");
}

}  // namespace
}  // namespace grape
