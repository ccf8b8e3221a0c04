// decoder_lm_items (runtime/cuda/decoder_items.h): which lm_head items each decoder-plan block takes.
#include "runtime/cuda/decoder_items.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace grape::cuda {
namespace {

// Every item exactly once, each block's in increasing order.
void expect_a_partition(const std::vector<std::vector<int>>& lm, int lm_items) {
  std::vector<int> seen(lm_items, 0);
  for (const std::vector<int>& l : lm) {
    EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
    for (int i : l) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, lm_items);
      ++seen[i];
    }
  }
  for (int i = 0; i < lm_items; ++i) EXPECT_EQ(seen[i], 1) << "item " << i;
}

TEST(DecoderLmItems, TheDefaultIsItemIToBlockIModGrid) {
  // GPT-2's 1,571 items of 32 columns over an H200's 120 blocks (96 of them layer blocks).
  const std::vector<std::vector<int>> lm = decoder_lm_items(1571, 120, 96, -1);
  ASSERT_EQ(lm.size(), 120u);
  for (int g = 0; g < 120; ++g) {
    std::vector<int> want;
    for (int i = g; i < 1571; i += 120) want.push_back(i);
    EXPECT_EQ(lm[g], want) << "block " << g;
  }
  EXPECT_EQ(lm[10].size(), 14u);
  EXPECT_EQ(lm[11].size(), 13u);
}

TEST(DecoderLmItems, TheRemainderGoesToTheLmHeadOnlyBlocksFirst) {
  const std::vector<std::vector<int>> lm = decoder_lm_items(1571, 120, 96, 0);
  expect_a_partition(lm, 1571);
  for (int g = 0; g < 96; ++g) EXPECT_EQ(lm[g].size(), 13u) << "block " << g;
  for (int g = 96; g < 120; ++g) EXPECT_EQ(lm[g].size(), g < 96 + 11 ? 14u : 13u) << "block " << g;
}

TEST(DecoderLmItems, LmHeadOnlyBlocksTakeTheirExtraItems) {
  // 1571 - 24 * 2 = 1523 = 120 * 12 + 83: every lm-only block 12 + 2 + 1, then 59 layer blocks 13.
  const std::vector<std::vector<int>> lm = decoder_lm_items(1571, 120, 96, 2);
  expect_a_partition(lm, 1571);
  for (int g = 96; g < 120; ++g) EXPECT_EQ(lm[g].size(), 15u) << "block " << g;
  for (int g = 0; g < 96; ++g) EXPECT_EQ(lm[g].size(), g < 59 ? 13u : 12u) << "block " << g;
}

TEST(DecoderLmItems, EachRoundReadsNeighbouringItems) {
  // Round 0 gives items 0..grid-1 to blocks 0..grid-1: the blocks start on one stretch of tiles.
  const std::vector<std::vector<int>> lm = decoder_lm_items(1571, 120, 96, 3);
  for (int g = 0; g < 120; ++g) EXPECT_EQ(lm[g].front(), g);
  // The extra items, last, are the end of the vocabulary.
  EXPECT_EQ(lm[119].back(), 1570);
}

TEST(DecoderLmItems, EdgeCasesStayPartitions) {
  for (int items : {0, 1, 7, 119, 120, 121, 1571})
    for (int grid : {1, 8, 96, 120, 128})
      for (int step : {0, grid / 2, grid})
        for (int extra : {-1, 0, 1, 5, 16}) {
          SCOPED_TRACE(::testing::Message() << items << " items, grid " << grid << ", " << step
                                            << " layer blocks, extra " << extra);
          const std::vector<std::vector<int>> lm = decoder_lm_items(items, grid, step, extra);
          ASSERT_EQ(lm.size(), size_t(grid));
          expect_a_partition(lm, items);
          // Counts differ by at most one among the layer blocks and among the lm-only blocks.
          auto spread = [&](int lo, int hi) {
            size_t mn = SIZE_MAX, mx = 0;
            for (int g = lo; g < hi; ++g) mn = std::min(mn, lm[g].size()), mx = std::max(mx, lm[g].size());
            return lo < hi ? mx - mn : 0;
          };
          EXPECT_LE(spread(0, step), 1u);
          EXPECT_LE(spread(step, grid), 1u);
        }
}

TEST(DecoderLmItems, NoBlocksNoItems) {
  EXPECT_TRUE(decoder_lm_items(10, 0, 0, -1).empty());
  EXPECT_TRUE(decoder_lm_items(10, -3, 0, 2).empty());
}

}  // namespace
}  // namespace grape::cuda
