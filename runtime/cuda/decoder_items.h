// Which of lm_head's items each block of the decoder plan takes (runtime/cuda/decoder_plan.h): a
// pure function, so that the split can be checked without a GPU.
//
// The grid's first `step_blocks` blocks run every layer step before lm_head; the others (the
// clusters that fit beyond the 12 heads') wait for the last layer step with their ring already
// full of their first lm_head items. The traces of run 290 showed lm_head's span set by its
// slowest blocks: 1,571 items over 120 blocks left 11 blocks a 14th item, and those were among
// the last to finish (bench/RESULTS.md, forty-third session).
#pragma once
#include <vector>

namespace grape::cuda {

// Items 0..lm_items-1 over `grid` blocks, each block's in increasing order, in rounds: round k
// gives item k * grid + j to the j-th block that takes a k-th item, so that at any moment the
// blocks read neighbouring tiles (the layout the weights were measured with).
//   lm_only_extra < 0: every block takes the same count, the remainder going to blocks 0, 1, ...
//     (the split every measurement before the forty-third session used);
//   lm_only_extra >= 0: the blocks from `step_blocks` on (lm_head only) take lm_only_extra more
//     items than the layer blocks, and the remainder goes to them first.
// Every item is taken exactly once; an empty list for a block that takes none.
std::vector<std::vector<int>> decoder_lm_items(int lm_items, int grid, int step_blocks, int lm_only_extra);

}  // namespace grape::cuda
