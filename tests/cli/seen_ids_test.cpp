// The duplicate-id check of `grape batch` (cli/batch_seen_ids.h).
#include <gtest/gtest.h>

#include <string>

#include "cli/batch_seen_ids.h"

namespace grape::cli {
namespace {

TEST(SeenIds, ASecondIdIsReportedWithTheLineOfTheFirst) {
  SeenIds seen;
  EXPECT_FALSE(seen.insert(11, "a", 1));
  EXPECT_FALSE(seen.insert(22, "b", 2));
  std::optional<size_t> first = seen.insert(11, "a", 7);
  ASSERT_TRUE(first);
  EXPECT_EQ(*first, 1u);
  EXPECT_EQ(seen.size(), 2u);
}

TEST(SeenIds, IdsWhoseHashesCollideAreStillDistinct) {
  SeenIds seen;
  EXPECT_FALSE(seen.insert(5, "x", 1));
  EXPECT_FALSE(seen.insert(5, "y", 2));   // same hash, another id
  EXPECT_FALSE(seen.insert(5, "xy", 3));  // a prefix of the text that follows "x" is not "x"
  EXPECT_EQ(seen.insert(5, "y", 4).value_or(0), 2u);
  EXPECT_EQ(seen.insert(5, "xy", 5).value_or(0), 3u);
  EXPECT_EQ(seen.size(), 3u);
}

TEST(SeenIds, ManyIdsThroughSeveralGrowths) {
  SeenIds seen;
  const size_t n = 100000;
  // Hashes that share their low bits, so that slots fill in long runs.
  auto hash = [](size_t i) { return static_cast<uint64_t>(i) << 20; };
  for (size_t i = 0; i < n; ++i) ASSERT_FALSE(seen.insert(hash(i), "id" + std::to_string(i), i + 1)) << i;
  EXPECT_EQ(seen.size(), n);
  for (size_t i = 0; i < n; i += 997)
    EXPECT_EQ(seen.insert(hash(i), "id" + std::to_string(i), n + 1).value_or(0), i + 1);
  EXPECT_FALSE(seen.insert(hash(3), "other", n + 2));
}

}  // namespace
}  // namespace grape::cli
