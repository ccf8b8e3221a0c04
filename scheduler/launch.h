// Launch geometry of a generated kernel for the current symbol bindings (see scheduler/launch_rule.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "scheduler/launch_rule.h"

namespace grape::scheduler {

struct LaunchDims {
  unsigned grid = 1;          // blocks (x only)
  unsigned block = 1;         // threads per block (x only)
  unsigned shared_bytes = 0;  // dynamic shared memory
  // MatrixProduct: KParams::splits and kchunk, and the zero-initialised scratch it needs.
  int64_t splits = 1, kchunk = 0;
  bool tensor_cores = false;  // launch the kernel's tensor-core entry point (jit/kernel_source.h)
  bool wide = false;          // ... its 128 x 128 tile variant (jit::kWideSuffix), tensor_cores too
  bool narrow = false;        // ... that variant's 128 x 64 wgmma entry (jit::kWgmma64Suffix), wide too
  bool n96 = false;  // ... its 128 x 96 wgmma entry (jit::kWgmma96Suffix; a tuning candidate), wide too
  bool m64 = false;  // ... its 64 x 64 wgmma entry (jit::kWgmmaM64Suffix; a tuning candidate), wide too
  size_t scratch_bytes = 0;
  // Blocks per thread-block cluster (sm_90): > 1 only for a split product whose K splits meet in
  // distributed shared memory (gemm_wgmma.cuh, "wgmma64-c*"): then cluster == splits and the grid
  // is exactly tiles * splits. The executors launch with CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION.
  int cluster = 1;
  // The kernel also runs launched without the cluster (gemv_mma.cuh: its splits then meet in the
  // scratch area), as the mono executor's persistent kernel does.
  bool cluster_optional = false;
};

// Rows of topk.cuh: elements per block of a row split over blocks (at least), and the most blocks
// per row. Each block's best k meet in the scratch area, where the row's last block merges them.
// A beam search's 251285 candidates: 30.5 µs at 8192 (30 blocks), 25.9 at 4096, 23.7 at 2048 (122
// blocks), 23.5 at 1024 (run 165, H200, event-timed): below that the merges' fixed cost remains.
constexpr int64_t kTopKElementsPerBlock = 2048;
constexpr int64_t kTopKMaxSplits = 128;
// kTopKElementsPerBlock, or GRAPE_TOPK_PER_BLOCK (256 .. 2^20; read once) for A/B measurements.
int64_t topk_elements_per_block();
// LaunchRule::cluster_rows: at least this many elements of a row per block of the cluster, at most
// kRowClusterMax blocks (the portable cluster size), and only while the rows' blocks stay within two
// per multiprocessor.
constexpr int64_t kRowClusterMinPerBlock = 4096;
constexpr int64_t kRowClusterMax = 8;
// The scratch of a topk launch: a u32 counter per row (padded to 8 bytes), then the k keys of
// every block of every row.
size_t topk_scratch_bytes(int64_t rows, int64_t splits, int k);

// One configuration a kernel can be launched with, named for the tuning cache ("wgmma128x2",
// "gemv-fill", "rows4"; runtime/cuda/autotune.h): the name says which policy made it, so it means
// the same for every shape of a shape bucket.
struct LaunchCandidate {
  std::string name;
  LaunchDims dims;
};
bool same_launch(const LaunchDims& a, const LaunchDims& b);

// Evaluates the rule's dims with `dims` (symbol -> value). The grid is capped (kernels grid-stride),
// and at least 1 even for empty work (the kernel then exits at once). `sm_count` sizes the
// matrix products' K splits and tile choice (they aim to cover every multiprocessor).
// `wgmma_device`: the wide tiles are built for sm_90a (gemm_wgmma_device), so products with
// LaunchRule::wgmma need gemm_wgmma_shared_bytes.
LaunchDims launch_dims(const LaunchRule& rule, const std::map<std::string, int64_t>& dims, int sm_count = 132,
                       bool wgmma_device = false);

// Every configuration the kernel's code can run for these dims, launch_dims's choice first, each
// once (autotuning times them: issue 7 item 6). Matrix products: the GEMV with and without K
// splits beyond what shared memory needs; for more than 16 rows the 128 x 128 tiles (wgmma with
// one or two blocks per multiprocessor, or mma.sync), wgmma's 128 x 64 tiles and the 64 x 64
// tiles with and without K splits. Attention (attention.cuh): fewer query rows per block. Others:
// just launch_dims's. Which of the wide ones a kernel can take depends on what was built
// (DeviceProgram filters). A matrix-product measurement switch (GRAPE_GEMM_*) being set leaves
// only its choice.
std::vector<LaunchCandidate> launch_candidates(const LaunchRule& rule,
                                               const std::map<std::string, int64_t>& dims, int sm_count = 132,
                                               bool wgmma_device = false);

// Experiment (GRAPE_GEMV_TC=1, read once): products of at most 16 rows run on the tensor cores
// too (gemm_mma.cuh with 16 x 128 tiles, 3 stages) instead of gemv.cuh. Code generation and launch
// decisions both follow it; it changes the kernel source, so the kernel cache keeps both.
bool gemv_uses_tensor_cores();

// Products of at most 16 rows with at least this many columns (a compile-time N) run on the tensor
// cores: there the GEMV template is instruction-bound (GPT-2's lm_head, N = 50257, K = 768, 5
// rows: 72.3 us on the GEMV, 58.5 us on the tensor cores on an H100, same run), while every
// product of GPT-2's layers (N <= 3072) is faster on the GEMV (bench/RESULTS.md, 2026-11-23).
// One measured shape, so the threshold is coarse and high: vocabulary projections, not the
// 16384-wide MLP products (not measured on the tensor cores).
constexpr int64_t kGemvTensorCoreMinColumns = 32768;
bool gemv_on_tensor_cores(const ir::Dim& n);

// Whether products with a [K][N] weight of 16-bit elements and at most kGemvMaxRows rows run
// jit/kernels/gemv_mma.cuh (the default) rather than gemv.cuh's FMA loop: GRAPE_GEMV_MMA=0 keeps
// the FMA loop, for A/B measurements.
bool gemv_kn_mma_enabled();
// Whether gemv_mma.cuh's blocks bring their weight tile into shared memory by bulk tensor copies
// (sm_90, K ranges of at most kGemvMmaTmaMaxK, a tensor map from the executor) rather than into
// registers: GRAPE_GEMV_TMA=0 keeps the registers, for A/B measurements (read once; part of every
// such kernel's source).
bool gemv_weight_tma();
// Whether gemv_mma.cuh's K splits in a cluster exchange their sums by st.async counted on the
// owner's mbarrier (sm_90; the default) rather than by stores and a cluster barrier:
// GRAPE_GEMV_XCHG=0 keeps the barrier, for A/B measurements (read once; part of the kernel source).
bool gemv_async_exchange();

// Whether kernels are built with the kernel timeline's stamps (jit/kernels/grid_dependency.cuh):
// GRAPE_KERNEL_TIMELINE names the file the executors write them to after each run
// (runtime/cuda/device_program.h). Part of every kernel's source, so of its cache key.
bool kernel_timeline();

// MatrixProduct kernels of at most this many rows run their GEMV entry point (jit/kernels/gemv.cuh,
// or 16-row tensor-core tiles for vocabulary projections); more rows take GEMM tiles.
constexpr int64_t kGemvMaxRows = 16;

// The dynamic shared memory a MatrixProduct kernel may ask for: the executor raises each such
// kernel's limit to this once, at load (its GEMV entry's to matrix_product_gemv_max_shared_bytes).
constexpr unsigned kMatrixProductMaxSharedBytes = 41472;

// Few rows over very many columns (a vocabulary projection: LaunchRule::gemv_tensor_cores) run
// 16 x 128 tensor-core tiles (gemm_mma.cuh, AWHOLE) with the block's 16 rows of A staged whole (K
// ranges of at most kGemvTcMaxKChunk, split beyond) and kGemvTcStages stages of 32 K steps of W,
// kGemvTcBlocksPerSm blocks per multiprocessor (the entry's __launch_bounds__): GPT-2's lm_head is
// 393 tiles, one wave at 3 blocks on 132 SMs, each block keeping 3 stages of W in flight.
constexpr int kGemvTcStages = 4, kGemvTcBlocksPerSm = 3;
constexpr int64_t kGemvTcMaxKChunk = 1024;
constexpr unsigned kGemvTcSharedBytes =
    2 * kGemvTcStages * 128 * 40 + 16 * 8 + 2 * 16 * (kGemvTcMaxKChunk + 8);
static_assert(kGemvTcBlocksPerSm * (kGemvTcSharedBytes + 1024) <= 228 * 1024,
              "the tensor-core GEMV's blocks fit one multiprocessor's shared memory (Hopper)");
// jit/kernels/gemv_mma.cuh's shared memory for a K range of `kchunk`: A [8][kchunk rounded up to
// 64, plus 8] in 2-byte elements, then floats: row statistics [8][2], the warps' sums [8][8][64] and
// the sums the blocks of a cluster send each other (at most [8][64] plus 8 of rounding) and the
// barrier that counts them (8 bytes); then, for K ranges of at most kGemvMmaTmaMaxK (rounded up to
// 64), the weight tile the copy engine fills (128 bytes per row, 1024-byte aligned: up to 1024 of
// padding) and its 8-byte barrier, padded to 16.
constexpr int64_t kGemvMmaTmaMaxK = 512;  // GRAPE_GEMV_MMA_TMA_MAX_K
constexpr unsigned gemv_mma_shared_bytes(int64_t kchunk) {
  const int64_t kcs = (kchunk + 63) / 64 * 64;
  return static_cast<unsigned>(8 * (kcs + 8) * 2 + 4 * (2 * 8 + 8 * 8 * 64 + 8 * 64 + 8) + 8 +
                               (kcs <= kGemvMmaTmaMaxK ? kcs * 128 + 1024 + 16 : 0));
}
// The limit of a MatrixProduct kernel's GEMV entry point (kKernelSymbol, its row-count variants);
// gemv_mma.cuh's K ranges are at most kGemvMaxKChunk (1536, gemv.cuh's); the most shared memory is
// that of the longest range with the weight tile.
constexpr unsigned matrix_product_gemv_max_shared_bytes(bool tensor_cores) {
  constexpr unsigned mma = gemv_mma_shared_bytes(1536) > gemv_mma_shared_bytes(kGemvMmaTmaMaxK)
                               ? gemv_mma_shared_bytes(1536)
                               : gemv_mma_shared_bytes(kGemvMmaTmaMaxK);
  constexpr unsigned plain = mma > kMatrixProductMaxSharedBytes ? mma : kMatrixProductMaxSharedBytes;
  return tensor_cores && kGemvTcSharedBytes > plain ? kGemvTcSharedBytes : plain;
}

// The 128 x 128 tiles are taken when they give at least this many blocks per multiprocessor (x
// 1/4: 0.5), i.e. the wave is about as full as with 64 x 64 tiles at two blocks per
// multiprocessor. GRAPE_GEMM_WIDE=0 never takes them, =1 always for more than 16 rows (A/B
// measurements; read once; any other value is an InvalidArgument error, as for the knobs below).
constexpr int64_t kWideMinBlocksPerSmQuarters = 2;
// A measurement switch from the environment variable `name`: unset or empty gives `fallback`,
// an integer in [lo, hi] itself; anything else throws InvalidArgument naming the variable.
int env_knob(const char* name, int lo, int hi, int fallback);
int gemm_wide_override();  // -1 none, 0 off, 1 on
// Pipeline stages of the wide tiles (GRAPE_GEMM_WIDE_STAGES=2..6 for measurements, read once; it
// changes the kernel source, so the kernel cache keeps each), and their dynamic shared memory:
// A and W stages of 128 x (32 + 8) 16-bit elements, then the row statistics. The executor sets
// each wide kernel's limit to this.
constexpr int kGemmWideStages = 3;
int gemm_wide_stages();
// Blocks of the wide tiles per multiprocessor (their __launch_bounds__): 2 holds them to 128
// registers (125, no spills on sm_90) so one block's epilogue and barriers overlap the other's
// tensor-core work; GRAPE_GEMM_WIDE_BLOCKS=1|2 for measurements (read once, changes the source).
constexpr int kGemmWideBlocksPerSm = 2;
int gemm_wide_blocks_per_sm();
// The shortest K range of a split of the 64 x 64 tensor-core tiles (GRAPE_GEMM_MIN_SPLIT_K=32..
// for measurements, read once): fewer, longer splits leave less for the finishing block to sum.
// BERT b=1 (H100, graph): 1.27 ms at 128, 1.19 at 256, 1.21 at 384 and 768.
constexpr int kGemmMinSplitK = 256;
int gemm_min_split_k();
unsigned gemm_wide_shared_bytes();

// Hopper's warpgroup MMA (jit/kernels/gemm_wgmma.cuh) for the wide tiles: used on a device whose
// NVRTC target is sm_90 (built as sm_90a) unless GRAPE_GEMM_WGMMA=0 (A/B measurements; read once).
bool gemm_wgmma_device(const std::string& arch);

// Programmatic dependent launch (jit/kernels/prelude.cuh): whether every kernel lets its successor
// launch as soon as it starts (griddepcontrol.launch_dependents after its wait) rather than as its
// blocks exit. GRAPE_GRAPH_PDL_EARLY=1 turns it on; part of the kernel source, so of its cache key.
bool launch_dependents_early();
// Slice-update kernels (jit/emit_kernels.cpp) let their successor launch as they start
// (GRAPE_RELEASE_AT_START, grid_dependency.cuh): they do little work, so the successor's launch
// and the prologue before its wait overlap them. GRAPE_UPDATE_PDL_EARLY=0 turns it off (A/B; part
// of the kernel source). Read once.
bool update_launch_dependents_early();
// GEMV entry points (jit/kernels/gemv.cuh, grape_gemv_wait) under programmatic dependent launch:
// 0 wait first, as every kernel; 1 a weight of the program has its first vectors requested before
// the wait; 2 also let the successor launch once the weight is read (griddepcontrol.launch_dependents
// after the last pass over it); 3 also the decode attention kernel after its passes over the keys
// and the vocabulary projection's tensor-core tiles after their weight (the default: decode_step
// 0.507-0.518 ms at 0, 0.463-0.468 at 2, 0.455-0.461 at 3; beam_search 91.1 / 85.9 / 84.9 ms per
// call; outputs bit-identical; run 168, H200). GRAPE_GEMV_PDL=0..3 (read once; part of the kernel
// source, so of its cache key).
int gemv_dependent_launch();
// The NVRTC target of the wide variants for a device (or bundle) target: sm_90a for sm_90 when
// gemm_wgmma_device, else `arch` itself.
std::string gemm_wide_target(const std::string& arch);
// The kernel takes its pipeline depth from its dynamic shared memory (32 KB stages of 2 x 128 x 64
// 16-bit elements, plus 1024 bytes to align them for the swizzle), so the launch decides:
//  - by default one block per multiprocessor, kGemmWgmmaStages stages (GRAPE_GEMM_WGMMA_STAGES=3|4
//    for measurements; 5 measured no faster than 4);
//  - two blocks per multiprocessor (3 stages each, 128 registers) when the tiles exceed one wave
//    and K is at least kGemmWgmmaTwoBlocksMinK: long K loops gain from the second block hiding the
//    first one's barriers and waits.
// GRAPE_GEMM_WGMMA_BLOCKS=1|2 forces either (0, the default: the rule above). H100, same run
// (bench_kernels): MLP fc1 at 256 rows (256 tiles, K 4096) 116 -> 84 us with two blocks; BERT
// b=16's FFN up (384 tiles, K 768) 29.9 -> 29.1 us alone but 38 -> 42 us inside BERT, whose
// whole forward went 2.01-2.06 -> 2.24-2.26 ms with two blocks for it; q/k/v (96 tiles) 14.2 ->
// 16.3 us with two (the block scheduler may pair blocks on one SM while others idle). Two data
// points make this rule; autotuning (issue 7 item 6) should replace it.
constexpr int64_t kGemmWgmmaTwoBlocksMinK = 2048;
// Products of wgmma operands that do not take the 128 x 128 tiles (too few to fill the GPU: BERT
// at batch 1) take 128 x 64 wgmma tiles without K splits, unless GRAPE_GEMM_WGMMA64=0 (then the
// 64 x 64 mma.sync tiles with K splits), when K % 8 == 0 and either K is at most
// kGemmWgmma64MaxK or the tiles fill half the multiprocessors (a long K over a handful of tiles
// is the split-K path's case). Dynamic shared memory: 4 stages of (128 + 64) x 128 bytes.
constexpr int64_t kGemmWgmma64MaxK = 4096;
// Always this many stages, so the entry point holds one main loop (jit/emit_matmul.cpp).
constexpr int kGemmWgmma64Stages = 4;
// The 64 x 64 tiles' stages: 8 of 16 KB, loads 6 K steps ahead (BERT b=1 0.479 -> 0.446 ms
// against 4, run 113; 128 x 64 tiles at 8 stages gained nothing over 4).
constexpr int kGemmWgmmaM64Stages = 8;
// The stages the 128 x 64 and the 64 x 64 entries are compiled for and launched with:
// kGemmWgmma64Stages and kGemmWgmmaM64Stages, or GRAPE_GEMM_WGMMA64_STAGES /
// GRAPE_GEMM_WGMMA_M64_STAGES (3..8) for measurements.
int gemm_wgmma64_stages();
int gemm_wgmma_m64_stages();
bool gemm_wgmma64_enabled();
unsigned gemm_wgmma64_shared_bytes();
// The 128 x 96 wgmma tiles' dynamic shared memory: 4 stages (one block per multiprocessor) or 3
// (two). The heuristic takes "wgmma96" when 128 x 128 tiles make less than one wave and 128 x 96
// tiles more of one (scheduler/launch.cpp); "wgmma96x2" is only a tuning candidate.
unsigned gemm_wgmma96_shared_bytes(int stages);
// The 64 x 64 wgmma tiles' (gemm_wgmma_m64_stages() of (64 + 64) x 128 bytes).
unsigned gemm_wgmma_m64_shared_bytes();
constexpr int kGemmWgmmaStages = 4;
int gemm_wgmma_stages();
int gemm_wgmma_blocks_override();  // 0 auto, 1, 2
unsigned gemm_wgmma_shared_bytes(int stages);
// The most any launch asks for (the executor sets each wgmma kernel's limit to it once).
unsigned gemm_wgmma_max_shared_bytes();

// The most dynamic shared memory an attention kernel asks for (within the default 48 KB, so no
// attribute is needed): head widths up to 256 fit, and the scores stay in it when they fit too.
constexpr unsigned kAttentionMaxSharedBytes = 48 * 1024;

// The dynamic shared memory of attention_mma.cuh for head widths dk, dv (its layout comment: q, k,
// v tiles, the statistics), and the most it asks for (widths up to scheduler::kMaxFusedMmaHeadDim
// = 128): the executor raises the limit of each tensor-core attention kernel to this once, at load.
constexpr unsigned attention_mma_shared_bytes(int64_t dk, int64_t dv) {
  const int64_t ldk = (dk + 15) / 16 * 16 + 8, ldv = (dv + 15) / 16 * 16 + 8;
  const int64_t stats = 4 * 2 * 16 * 2 * 4;
  return static_cast<unsigned>(2 * (64 * ldk + 2 * 64 * ldk + 2 * 64 * ldv) + stats);
}
constexpr unsigned kAttentionMmaMaxSharedBytes = attention_mma_shared_bytes(128, 128);

// The second entry point of attention_mma.cuh (8 warps): 32 query rows per block, four warps per
// 16 rows, each a quarter of every key tile, where the head widths allow it (the output's column
// blocks split four ways, the partial outputs fit in the k and v tiles); else 64 rows, two warps
// per 16 rows. Small batches then run on twice the blocks (BERT-base at batch 1: 48, not 24).
// The code generator and the launch both ask this.
constexpr bool attention_mma_quarter_keys(int64_t dk, int64_t dv) {
  const int64_t dkp = (dk + 15) / 16 * 16, dvp = (dv + 15) / 16 * 16;
  return dvp % 32 == 0 && 2 * 3 * dvp * 64 <= 256 * (dkp + 8) + 256 * (dvp + 8);
}
constexpr int64_t attention_mma_split_rows(int64_t dk, int64_t dv) {
  return attention_mma_quarter_keys(dk, dv) ? 32 : 64;
}

constexpr int64_t kMaxGrid = 65535;

// GEMV (jit/kernels/gemv.cuh): the longest K range of one block (GRAPE_GEMV_KC), and the number of
// blocks the code generator's column tiles aim for before K splits are added.
constexpr int64_t kGemvMaxKChunk = 1536;
constexpr int64_t kGemvTargetBlocks = 128;
// gemv_mma.cuh: the most K splits of a tile the heuristic makes (one cluster: the portable size),
// or GRAPE_GEMV_MMA_SPLITS (1 .. 8; read once) for A/B measurements.
constexpr int64_t kGemvMmaMaxCluster = 8;
int64_t gemv_mma_max_splits();

}  // namespace grape::scheduler
