#include "runtime/cuda/decoder_items.h"

#include <algorithm>

namespace grape::cuda {

std::vector<std::vector<int>> decoder_lm_items(int lm_items, int grid, int step_blocks, int lm_only_extra) {
  std::vector<std::vector<int>> out(std::max(grid, 0));
  if (grid <= 0 || lm_items <= 0) return out;
  step_blocks = std::clamp(step_blocks, 0, grid);
  std::vector<int> count(grid, 0);
  if (lm_only_extra < 0 || step_blocks == grid) {
    for (int g = 0; g < grid; ++g) count[g] = lm_items / grid + (g < lm_items % grid ? 1 : 0);
  } else {
    const int only = grid - step_blocks;
    // Each lm-only block's extra items first (as far as the items go), then the rest evenly,
    // the remainder to the lm-only blocks first.
    const int extra = std::min(lm_only_extra, lm_items / only);
    const int rest = lm_items - extra * only;
    for (int g = 0; g < grid; ++g) {
      const int order = g >= step_blocks ? g - step_blocks : only + g;  // lm-only blocks first
      count[g] = (g >= step_blocks ? extra : 0) + rest / grid + (order < rest % grid ? 1 : 0);
    }
  }
  for (int g = 0; g < grid; ++g) out[g].reserve(count[g]);
  // Round k: every block with more than k items takes the next one, in block order.
  int next = 0;
  for (int k = 0; next < lm_items; ++k)
    for (int g = 0; g < grid && next < lm_items; ++g)
      if (count[g] > k) out[g].push_back(next++);
  return out;
}

}  // namespace grape::cuda
