// The decoder plan's kernel (jit/kernels/decoder_step.cuh, runtime/cuda/decoder_plan.h): a GPT-2
// small decode step as one persistent kernel of two cluster-partitioned stages a layer. Its
// parameter block, its work items and the byte layout of each item's weights, for both sides: the
// host includes this header and every decoder source embeds its text (jit/embed.cmake), as
// kernel_abi.h. Include guards, not #pragma once: NVRTC sees this text inside the main file.
#ifndef GRAPE_JIT_DECODER_ABI_H
#define GRAPE_JIT_DECODER_ABI_H

// The layout functions run on both sides.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GRAPE_DEC_HD __host__ __device__
#else
#define GRAPE_DEC_HD
#endif

#ifndef __CUDACC_RTC__
namespace grape::jit {
#endif

// The shapes the kernel is written for (GPT-2 small's block): one cluster of 8 blocks a head, so
// a block takes 24 of the head's 192 q/k/v columns and 96 of the 768 output columns of attn
// c_proj and mlp c_proj; lm_head goes 32 vocabulary columns an item.
constexpr int kDecEmbed = 768, kDecHeads = 12, kDecHeadDim = 64, kDecFfn = 3072;
constexpr int kDecCluster = 8, kDecThreads = 256, kDecLaunchThreads = kDecThreads + 32;
constexpr int kDecQkvCols = 3 * kDecHeadDim / kDecCluster;  // 24
constexpr int kDecProjCols = kDecEmbed / kDecCluster;       // 96
constexpr int kDecLmCols = 32;
constexpr int kDecMaxRows = 8;         // one attention row per block of a cluster
constexpr int kDecInFlight = 8;        // items the producer may have in the ring at once
constexpr int kDecMaxShared = 232448;  // 227 KB: the most dynamic shared memory a block may have

// Byte offsets inside a stage-A item (head h, rank r): the q/k/v tile [768][24] (rank r's 24 of
// the head's q, k, v columns in that order), ln_1 scale and shift, the 24 biases, the head's 64
// rows of attn c_proj for this block's 96 columns as [12][64][8], attn c_proj's bias [768].
constexpr unsigned kDecAT = 0, kDecAG = kDecAT + kDecEmbed * kDecQkvCols * 2,
                   kDecAB = kDecAG + 2 * kDecEmbed * 2, kDecAW = kDecAB + kDecQkvCols * 2,
                   kDecAPB = kDecAW + kDecHeadDim * kDecProjCols * 2, kDecABytes = kDecAPB + kDecEmbed * 2;
// A stage-B item (C c_fc columns a block): the c_fc tile [768][C] (32 columns: swizzled, see
// decoder_tile_at), ln_2 scale and shift, C biases, mlp c_proj's rows of the cluster's 8 C c_fc
// columns for this block's 96 columns [12][8 C][8], mlp c_proj's bias [768].
struct DecoderBLayout {
  unsigned t, g, b, w2, pb, bytes;
};
GRAPE_DEC_HD constexpr DecoderBLayout decoder_b_layout(int C) {
  return DecoderBLayout{
      0u,
      (unsigned)(kDecEmbed * C * 2),
      (unsigned)(kDecEmbed * C * 2 + 2 * kDecEmbed * 2),
      (unsigned)(kDecEmbed * C * 2 + 2 * kDecEmbed * 2 + C * 2),
      (unsigned)(kDecEmbed * C * 2 + 2 * kDecEmbed * 2 + C * 2 + C * kDecEmbed * 2),
      (unsigned)(kDecEmbed * C * 2 + 2 * kDecEmbed * 2 + C * 2 + C * kDecEmbed * 2 + kDecEmbed * 2)};
}
// An lm_head item: the tile [768][32] (swizzled); a block's first one is followed by ln_f's scale
// and shift.
constexpr unsigned kDecLmT = 0, kDecLmG = kDecEmbed * kDecLmCols * 2;
// Element (k, j) of a tile [768][cols], in halves: a 32-column tile's 64-byte rows would put the 8
// rows one ldmatrix reads in 2 bank groups, so 16-byte chunk j of row k goes to j ^ ((k >> 1) & 3).
GRAPE_DEC_HD constexpr unsigned long long decoder_tile_at(int k, int j, int cols) {
  return cols != 32 ? (unsigned long long)k * cols + j
                    : (unsigned long long)k * 32 + ((((unsigned)j >> 3) ^ (((unsigned)k >> 1) & 3u)) << 3) +
                          ((unsigned)j & 7u);
}

// A block's dynamic shared memory, byte offsets: the ring, the staged rows As (f16 [rows][776]),
// the products' per-warp sums red (f32 [8][rows][32]), the row's q/k/v (f32 [192]), the head's
// attention outputs att (f32 [rows][64]), a scratch area part (a layer step's input rows, f32
// [rows][768], as the cluster's multicast copy brings them; then stage B's gelu outputs and
// partial sums, or the attention's per-warp maxima, sums and outputs), fs (stage B's own gelu outputs, f16
// [rows][40]), then the mbarriers and the producer's bookkeeping. Nothing depends on the cache's
// length: the attention keeps its scores in registers.
struct DecoderShared {
  unsigned ring, as, red, qkv, att, part, fs, bars, total;
};
GRAPE_DEC_HD constexpr DecoderShared decoder_shared(int rows, unsigned ring_bytes) {
  const unsigned part_floats =
      (unsigned)(rows * kDecEmbed) > 16u + 4u + 512u ? (unsigned)(rows * kDecEmbed) : 16u + 4u + 512u;
  DecoderShared s{};
  s.ring = 0;
  s.as = ring_bytes;
  s.red = s.as + (unsigned)rows * (kDecEmbed + 8) * 2;
  s.qkv = s.red + 8u * (unsigned)rows * 32 * 4;
  s.att = s.qkv + 192 * 4;
  s.part = s.att + (unsigned)rows * kDecHeadDim * 4;
  s.fs = s.part + part_floats * 4;
  s.bars = s.fs + (unsigned)rows * 40 * 2;
  s.bars = (s.bars + 15u) & ~15u;
  // 8 + 2 + 3 + 8 mbarriers and ring ends (8 bytes each), 8 ring starts, two flags, the 8 slots'
  // claimed lm_head items, the producer's descriptor of a claimed item (a DecoderItem, 48 bytes).
  s.total = s.bars + (kDecInFlight + 2 + 3 + kDecInFlight) * 8 + kDecInFlight * 4 + 8 + kDecInFlight * 4 + 48;
  return s;
}

// The ring's bytes for `rows` rows: what is left of the 227 KB (at most 192 KB), in whole KB; 0
// when that cannot hold a stage-A and a stage-B item (C c_fc columns).
GRAPE_DEC_HD constexpr unsigned decoder_ring_bytes(int rows, int C) {
  const unsigned rest = decoder_shared(rows, 0).total;
  if (rest >= (unsigned)kDecMaxShared) return 0;
  const unsigned left = ((unsigned)kDecMaxShared - rest) & ~1023u, ring = left < 196608u ? left : 196608u;
  return ring >= kDecABytes + decoder_b_layout(C).bytes ? ring : 0u;
}

// One work item of one block: its bytes are copied into the block's ring (up to two pieces).
struct DecoderItem {
  int step;   // 2 l: layer l's stage A; 2 l + 1: its stage B; 2 L: lm_head
  int index;  // lm_head: the item (columns 32 index ..); stage A: the row whose past keys and
              // values the block reads (put into L2 when the item is issued), or -1
  unsigned bytes;
  int pieces;
  const void* src[2];
  unsigned len[2], off[2];
};

static_assert(sizeof(DecoderItem) == 48, "decoder_shared keeps 48 bytes for one");

struct DecoderParams {
  const DecoderItem* items;  // [grid][max_items]
  const int* nitems;         // [grid]
  int max_items;
  unsigned* counters;  // [2 L]: every step block adds 1 when it has done step s
  // Two sets [2][2 L][rows][768] of fp32 sums: step s adds its input rows and its products' outputs
  // into Y[s], step s + 1's input; the set a launch does not use is zeroed for the next.
  float* Y;
  // The token ids and the cache position p (0 <= p < T) by value: the host checks them before the
  // launch, and step 0's rows (and the first item's size) then wait for no global load of them.
  int tokens[kDecMaxRows];
  int position;
  const void* token_table;     // f16 [V][768] (wte)
  const void* position_table;  // f16 [P][768] (wpe)
  void* k_cache;               // f16 [L][rows][12][T][64]
  void* v_cache;
  void* logits;      // f16 [rows][V]
  const float* eps;  // [2 L + 1]: ln_1, ln_2 of each layer, then ln_f
  float scale;       // the attention scores' scale
  float masked;      // the score of a masked position (where's fill value)
  int step_blocks;   // blocks 0.. that take part in the layers (the rest: lm_head only)
  int b_clusters;    // clusters in stage B (the first 12 do stage A, one a head)
  unsigned epoch;    // launches so far, this one included (the counters' targets)
  unsigned pace_ns;  // one weight copy of at most 8 KB every pace_ns (0: unpaced)
  int lm_l2;         // lm_head items put into L2 during the last lm_l2 layer steps
  int lm_l2_spread;  // ... each a piece after every weight copy of the next item (else at once)
  int kv_ring;       // a row's past keys and values into the ring where they fit
  int l2_hints;      // weights streamed as L2 evict_first, lm_head's items put into L2 as evict_last
  int rows_multicast;  // a layer step's rows: one L2 read a cluster, multicast (else every block's own)
  // lm_head items claimed at run time (GRAPE_DECODER_LM_CLAIM): items lm_claim_from..lm_items - 1
  // are in no block's list; a block's producer takes the next one from lm_claims[epoch & 1] each
  // time its ring has room, after its own list (so blocks that stream faster take more). Set when
  // the kernel is built with them (GRAPE_DEC_LM_CLAIM), else null: every item is in a list. A
  // launch zeroes lm_claims[(epoch + 1) & 1] for the next.
  unsigned* lm_claims;
  int lm_claim_from, lm_items;
  const void* lm_tiles;  // lm_head's tiles, kDecLmG bytes an item
  const void* lnf;       // ln_f's scale and shift (f16 [2][768]), after a block's first lm_head tile
  // Null, or [grid][max_items][kDecTraceStamps] %globaltimer stamps of each block's items (its
  // thread 0): [0] start, [1] counter seen, [10] rows' loads issued (none at layer steps under
  // rows_multicast: the copy is waited for before [3]), [2] item in the ring, [3] rows staged,
  // [4] done; inside stage A [5] q/k/v product, [6] the row's q/k/v arrived, [11] warp 0's
  // keys, [12] every warp's keys (row blocks), [7] attention (row blocks), [8] the head's outputs
  // arrived, [9] attn c_proj issued; inside stage B [5] c_fc product, [6] gelu, [8] the cluster's
  // gelu outputs arrived, [9] mlp c_proj issued (GRAPE_MONO_TRACE).
  unsigned long long* trace;
};
constexpr int kDecTraceStamps = 13;

#ifndef __CUDACC_RTC__
}  // namespace grape::jit
#endif

#endif  // GRAPE_JIT_DECODER_ABI_H
