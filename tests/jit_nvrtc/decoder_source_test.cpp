// The decoder plan's kernel (jit/kernels/decoder_step.cuh through jit::decoder_kernel_source),
// compiled with NVRTC for its target (sm_90a) at the row counts and stage-B partitions the plan builds (label
// nvrtc: CI compiles it without a GPU); tests/gpu/decoder_plan_test.cpp runs it.
#include <gtest/gtest.h>

#include "jit/decoder_abi.h"
#include "jit/kernel_source.h"
#include "jit/nvrtc.h"

namespace grape {
namespace {

TEST(DecoderSource, CompilesWithoutWarningsForEveryRowCountAndPartition) {
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  struct Shape {
    int rows, fc_cols;
    long long cache_len;
  };
  // GPT-2 small's 12 layers and vocabulary; 1, 5 and 8 rows; 16 and 12 clusters in stage B; with
  // and without lm_head's claimed items and every other switch (2 late lm_head prefetches).
  for (const Shape s : {Shape{1, 32, 256}, Shape{5, 32, 256}, Shape{8, 24, 1024}})
    for (const jit::DecoderSwitches sw :
         {jit::DecoderSwitches{}, jit::DecoderSwitches{true, true, true, true, 2}}) {
      const unsigned ring = jit::decoder_ring_bytes(s.rows, s.fc_cols);
      ASSERT_GT(ring, 0u) << s.rows << " rows";
      const std::string src = jit::decoder_kernel_source(s.rows, 12, s.cache_len, 50257, s.fc_cols, ring, sw);
      const jit::CompileResult r =
          jit::compile_cuda(src, "decoder_" + std::to_string(s.rows), jit::kDecoderArch);
      EXPECT_FALSE(r.cubin.empty()) << s.rows << " rows, switches " << sw.lm_claim << sw.prefetch_next
                                    << sw.one_poller << sw.kv_evict_first << sw.lm_late;
      EXPECT_FALSE(r.has_warnings()) << r.log;
    }
}

// The shared memory a block takes stays within the 227 KB a block may have, with the ring it gets,
// which holds a stage-A and a stage-B item (C = 24 and 32 c_fc columns) at every row count.
TEST(DecoderSource, SharedMemoryFitsABlock) {
  for (int rows = 1; rows <= jit::kDecMaxRows; ++rows)
    for (int c : {24, 32}) {
      const unsigned ring = jit::decoder_ring_bytes(rows, c);
      ASSERT_GE(ring, jit::kDecABytes + jit::decoder_b_layout(c).bytes) << rows << " rows, C " << c;
      EXPECT_LE(jit::decoder_shared(rows, ring).total, static_cast<unsigned>(jit::kDecMaxShared))
          << rows << " rows, C " << c;
      EXPECT_EQ(ring % 1024, 0u);
    }
}

}  // namespace
}  // namespace grape
