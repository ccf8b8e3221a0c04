#include "scheduler/launch.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/error.h"

namespace grape::scheduler {

namespace {
int64_t ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

// Mirrors jit/kernels/gemv.cuh and gemm_mma.cuh: GEMV column tiles, the longest K range of a split,
// shared memory of each path.
constexpr int64_t kGemvMaxRows = 16, kGemvSplitUnit = 64, kMinSplitK = 128;
// A [8][K range rounded up to 64] in 2-byte elements, then floats: row statistics, cross-warp sums.
constexpr unsigned gemv_shared_bytes(int64_t kchunk) {
  return static_cast<unsigned>(8 * ((kchunk + 63) / 64 * 64) * 2 + 4 * (2 * 8 + 8 * 8 * 64));
}
// 64 x 64 tiles, 4 stages of BK = 32, rows padded by 8 elements, plus the row statistics.
constexpr unsigned kGemmSharedBytes = 4 * 2 * (64 * 40 + 64 * 40) + 64 * 8;

// K splits so that `tiles` work items become at most about `target` (one wave: a second wave
// doubles the latency-bound time of these short blocks), each K range a multiple of `unit` and at
// least `min_k` long (shorter ranges cost more in partial sums than they gain).
void split_k(int64_t K, int64_t tiles, int64_t target, int64_t min_splits, int64_t unit, LaunchDims& d,
             int64_t min_k = kMinSplitK) {
  int64_t splits = std::max(min_splits, target / std::max<int64_t>(tiles, 1));
  splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, K / min_k));
  splits = std::max(splits, min_splits);
  d.kchunk = std::max<int64_t>(unit, ceil_div(ceil_div(K, splits), unit) * unit);
  d.splits = std::max<int64_t>(1, ceil_div(K, d.kchunk));
}

size_t splitk_scratch(int64_t tiles, int64_t splits, int64_t R, int64_t N) {
  return splits > 1 ? static_cast<size_t>(ceil_div(tiles * 4, 256) * 256 + splits * R * N * 4) : 0;
}

static_assert(kGemmSharedBytes == kMatrixProductMaxSharedBytes &&
              gemv_shared_bytes(kGemvMaxKChunk) <= kMatrixProductMaxSharedBytes);

// gemm_mma.cuh with BM = 16, BN = 128, 3 stages: A and B stages of BK = 32 (rows padded by 8).
constexpr unsigned kGemvTcSharedBytes = 2 * 3 * (16 * 40 + 128 * 40) + 16 * 8;
static_assert(kGemvTcSharedBytes <= kMatrixProductMaxSharedBytes);

bool wide_tiles(int64_t R, int64_t N, int sm_count) {
  const int o = gemm_wide_override();
  if (o >= 0) return o == 1;
  return ceil_div(R, 128) * ceil_div(N, 128) * 4 >= kWideMinBlocksPerSmQuarters * int64_t{sm_count};
}

void matrix_product(const LaunchRule& rule, int64_t R, int64_t N, int64_t K, int sm_count, bool wgmma_device,
                    LaunchDims& d, int64_t& blocks) {
  if (R <= kGemvMaxRows && rule.gemv_tensor_cores) {
    int64_t tiles = ceil_div(N, 128);
    split_k(K, tiles, 2 * int64_t{sm_count}, 1, 32, d);
    d.shared_bytes = kGemvTcSharedBytes;
    d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
    blocks = tiles * d.splits;
  } else if (R <= kGemvMaxRows) {
    // A K range holds at most kGemvMaxKChunk (shared memory). Without further K splits when the
    // column tiles (narrowed by the code generator for this, LaunchRule::gemv_cols) already give
    // half a block per multiprocessor: a split costs a round of partial sums through global memory.
    int64_t tiles = ceil_div(N, rule.weight_kn ? rule.gemv_cols : 128);
    const int64_t min_splits = ceil_div(K, kGemvMaxKChunk);
    if (tiles * min_splits >= sm_count / 2)
      split_k(K, tiles, 0, min_splits, kGemvSplitUnit, d);
    else
      split_k(K, tiles, 2 * int64_t{sm_count}, min_splits, kGemvSplitUnit, d);
    d.shared_bytes = gemv_shared_bytes(d.kchunk);
    d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
    blocks = tiles * d.splits;
  } else if (rule.allow_wide && wide_tiles(R, N, sm_count)) {
    d.tensor_cores = true;
    d.wide = true;
    d.shared_bytes = gemm_wide_shared_bytes();
    if (rule.wgmma && wgmma_device) {
      const int o = gemm_wgmma_blocks_override();
      const bool two =
          o == 0 ? ceil_div(R, 128) * ceil_div(N, 128) > sm_count && K >= kGemmWgmmaTwoBlocksMinK : o == 2;
      d.shared_bytes = gemm_wgmma_shared_bytes(two ? 3 : gemm_wgmma_stages());
    }
    d.kchunk = std::max<int64_t>(K, 1);
    blocks = ceil_div(R, 128) * ceil_div(N, 128);
  } else if (rule.allow_wide && rule.wgmma && wgmma_device && gemm_wgmma64_enabled() && K % 8 == 0 &&
             (K <= kGemmWgmma64MaxK || ceil_div(R, 128) * ceil_div(N, 64) * 2 >= sm_count)) {
    d.tensor_cores = true;
    d.wide = true;  // built with the wide variant (sm_90a)
    d.narrow = true;
    d.shared_bytes = gemm_wgmma64_shared_bytes();
    d.kchunk = std::max<int64_t>(K, 1);
    blocks = ceil_div(R, 128) * ceil_div(N, 64);
  } else {
    // 64 x 64 tiles, split along K when they would leave multiprocessors idle.
    d.tensor_cores = true;
    d.shared_bytes = kGemmSharedBytes;
    int64_t tiles = ceil_div(R, 64) * ceil_div(N, 64);
    if (tiles < sm_count)
      split_k(K, tiles, 2 * int64_t{sm_count}, 1, 32, d, gemm_min_split_k());
    else
      d.kchunk = std::max<int64_t>(K, 1);
    d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
    blocks = tiles * d.splits;
  }
}

// Mirrors jit/kernels/attention.cuh: query rows per block (the 8 warps split the keys of fewer
// rows), and its shared memory: q rows, per-warp k tiles, row statistics, cached scores.
void attention(int64_t S, int64_t KV, int64_t DK, LaunchDims& d, int64_t batch, int64_t& blocks) {
  int64_t rows = S <= 1 ? 1 : S <= 2 ? 2 : S <= 4 ? 4 : 8;
  int64_t dkp = ceil_div(DK, 32) * 32, kvp = ceil_div(KV, 32) * 32;
  int64_t floats = rows * dkp + 8 * 32 * 33 + 2 * 8;
  int64_t cached = floats + rows * kvp;
  d.splits = rows;
  d.kchunk = cached * 4 <= kAttentionMaxSharedBytes ? 1 : 0;
  d.shared_bytes = static_cast<unsigned>(4 * (d.kchunk ? cached : floats));
  blocks = batch * ceil_div(S, rows);
}

// Mirrors jit/kernels/attention_mma.cuh: 64 query rows per block of 128 threads; q, two k and two
// v tiles of 16-bit elements in shared memory, head widths padded to 16 and rows by 8 more.
void attention_mma(int64_t S, int64_t DK, int64_t DV, LaunchDims& d, int64_t batch, int64_t& blocks) {
  d.shared_bytes = attention_mma_shared_bytes(DK, DV);
  blocks = batch * ceil_div(S, 64);
}

}  // namespace

// A typo in a measurement switch must not silently measure the default: hence the error.
int env_knob(const char* name, int lo, int hi, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || errno != 0 || n < lo || n > hi)
    throw Error(ErrorCode::InvalidArgument, std::string(name) + " must be an integer from " +
                                                std::to_string(lo) + " to " + std::to_string(hi) + ", got '" +
                                                v + "'");
  return static_cast<int>(n);
}

int gemm_wide_override() {
  static const int o = env_knob("GRAPE_GEMM_WIDE", 0, 1, -1);
  return o;
}

int gemm_wide_stages() {
  static const int s = env_knob("GRAPE_GEMM_WIDE_STAGES", 2, 6, kGemmWideStages);
  return s;
}

int gemm_wide_blocks_per_sm() {
  static const int b = env_knob("GRAPE_GEMM_WIDE_BLOCKS", 1, 2, kGemmWideBlocksPerSm);
  return b;
}

int gemm_min_split_k() {
  static const int k = env_knob("GRAPE_GEMM_MIN_SPLIT_K", 32, 1 << 20, kGemmMinSplitK);
  return k;
}

unsigned gemm_wide_shared_bytes() {
  return static_cast<unsigned>(gemm_wide_stages() * 2 * (128 * 40 + 128 * 40) + 128 * 8);
}

bool gemm_wgmma_device(const std::string& arch) {
  static const bool on = env_knob("GRAPE_GEMM_WGMMA", 0, 1, 1) == 1;
  return on && arch == "sm_90";
}

bool launch_dependents_early() {
  static const bool on = env_knob("GRAPE_GRAPH_PDL_EARLY", 0, 1, 0) == 1;
  return on;
}

std::string gemm_wide_target(const std::string& arch) { return gemm_wgmma_device(arch) ? "sm_90a" : arch; }

int gemm_wgmma_blocks_override() {
  static const int b = env_knob("GRAPE_GEMM_WGMMA_BLOCKS", 0, 2, 0);
  return b;
}

int gemm_wgmma_stages() {
  static const int s = env_knob("GRAPE_GEMM_WGMMA_STAGES", 3, 4, kGemmWgmmaStages);
  return s;
}

namespace {
// Mirrors GRAPE_WGMMA_STAGE_BYTES (jit/kernels/gemm_wgmma.cuh): A's 128 rows and W's bn rows of 128
// bytes; plus 1024 bytes to align the stages for the swizzle.
unsigned wgmma_shared_bytes(int stages, int bn) {
  return static_cast<unsigned>(stages * (128 + bn) * 128 + 1024);
}
}  // namespace

unsigned gemm_wgmma_shared_bytes(int stages) {
  return std::max(wgmma_shared_bytes(stages, 128), gemm_wide_shared_bytes());
}

bool gemm_wgmma64_enabled() {
  static const bool on = env_knob("GRAPE_GEMM_WGMMA64", 0, 1, 1) == 1;
  return on;
}

unsigned gemm_wgmma64_shared_bytes() { return wgmma_shared_bytes(4, 64); }

unsigned gemm_wgmma_max_shared_bytes() { return gemm_wgmma_shared_bytes(std::max(3, gemm_wgmma_stages())); }

bool gemv_uses_tensor_cores() {
  static const bool on = env_knob("GRAPE_GEMV_TC", 0, 1, 0) == 1;
  return on;
}

bool gemv_on_tensor_cores(const ir::Dim& n) {
  return gemv_uses_tensor_cores() || (n.is_const() && n.const_value() >= kGemvTensorCoreMinColumns);
}

size_t topk_scratch_bytes(int64_t rows, int64_t splits, int k) {
  return static_cast<size_t>(rows) * 8 + static_cast<size_t>(rows * splits * k) * 8;
}

LaunchDims launch_dims(const LaunchRule& rule, const std::map<std::string, int64_t>& dims, int sm_count,
                       bool wgmma_device) {
  LaunchDims d;
  d.block = static_cast<unsigned>(rule.threads);
  int64_t blocks = 1;
  auto item = [&](size_t i) {
    return i < rule.items.size() ? std::max<int64_t>(0, rule.items[i].eval(dims)) : 1;
  };
  switch (rule.kind) {
    case LaunchRule::Elementwise: {
      int64_t n = 1;
      for (size_t i = 0; i < rule.items.size(); ++i) n *= item(i);
      blocks = ceil_div(n, rule.threads);
      break;
    }
    case LaunchRule::Rows: {
      int64_t n = 1;
      for (size_t i = 0; i < rule.items.size(); ++i) n *= item(i);
      blocks = ceil_div(n, std::max(1, rule.rows_per_block));
      if (rule.topk_k > 0 && n > 0) {
        // One block per row is issue-bound on a long row (a beam search's 251k candidates: 145 us
        // on one H100 SM); spread a row over blocks until the rows fill the GPU twice.
        int64_t len = std::max<int64_t>(0, rule.row_len.eval(dims));
        int64_t splits = std::clamp<int64_t>(std::min(len / kTopKElementsPerBlock, 2 * sm_count / n), 1,
                                             kTopKMaxSplits);
        d.splits = splits;
        blocks = n * splits;
        if (splits > 1) d.scratch_bytes = topk_scratch_bytes(n, splits, rule.topk_k);
      }
      break;
    }
    case LaunchRule::Tiles: {
      int64_t batch = item(0), m = item(1), n = item(2);
      blocks = m <= rule.gemv_max_m ? batch * ceil_div(n, rule.gemv_cols)
                                    : batch * ceil_div(m, rule.tile_m) * ceil_div(n, rule.tile_n);
      break;
    }
    case LaunchRule::Single: blocks = 1; break;
    case LaunchRule::MatrixProduct:
      matrix_product(rule, item(0), item(1), item(2), sm_count, wgmma_device, d, blocks);
      break;
    case LaunchRule::Attention:
      if (rule.attention_mma)
        attention_mma(item(1), item(3), item(4), d, item(0), blocks);
      else
        attention(item(1), item(2), item(3), d, item(0), blocks);
      break;
  }
  d.grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
  return d;
}

}  // namespace grape::scheduler
