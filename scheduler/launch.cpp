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
constexpr int64_t kGemvSplitUnit = 64, kMinSplitK = 128;
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
              gemv_shared_bytes(kGemvMaxKChunk) <= kMatrixProductMaxSharedBytes &&
              gemv_mma_shared_bytes(kGemvMaxKChunk) <= matrix_product_gemv_max_shared_bytes(false));

// kGemvTcSharedBytes (launch.h): gemm_mma.cuh with BM = 16, BN = 128, kGemvTcStages W stages of BK =
// 32 (rows padded by 8), the row statistics, and A whole: 16 rows of a K range of at most
// kGemvTcMaxKChunk, rounded up to 64 and padded by 8.

bool wide_tiles(int64_t R, int64_t N, int sm_count) {
  const int o = gemm_wide_override();
  if (o >= 0) return o == 1;
  return ceil_div(R, 128) * ceil_div(N, 128) * 4 >= kWideMinBlocksPerSmQuarters * int64_t{sm_count};
}

// The launch configurations of the matrix-product paths. Each sets grid too.
LaunchDims gemv_tc_dims(int64_t R, int64_t N, int64_t K, int sm_count) {
  LaunchDims d;
  const int64_t tiles = ceil_div(N, 128);
  split_k(K, tiles, 2 * int64_t{sm_count}, ceil_div(K, kGemvTcMaxKChunk), 32, d);
  d.shared_bytes = kGemvTcSharedBytes;
  d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
  d.grid = static_cast<unsigned>(tiles * d.splits);
  return d;
}

// A K range holds at most kGemvMaxKChunk (shared memory). `fill`: more K splits until the blocks
// cover every multiprocessor twice; else only the splits shared memory needs. gemv_mma.cuh's
// splits (at most kGemvMmaMaxCluster where the K ranges allow) are one thread-block cluster per
// tile on a device with clusters (`clusters`), adding their sums in distributed shared memory;
// the kernel also runs without (LaunchDims::cluster_optional: the mono executor), through the
// scratch area.
LaunchDims gemv_dims(const LaunchRule& rule, int64_t R, int64_t N, int64_t K, int sm_count, bool fill,
                     bool clusters) {
  LaunchDims d;
  const int64_t tiles = ceil_div(N, rule.weight_kn ? rule.gemv_cols : 128);
  const int64_t min_splits = ceil_div(K, kGemvMaxKChunk);
  int64_t target = fill ? 2 * int64_t{sm_count} : 0;
  if (rule.gemv_mma) target = std::min(target, tiles * gemv_mma_max_splits());
  split_k(K, tiles, target, min_splits, kGemvSplitUnit, d);
  d.shared_bytes = rule.gemv_mma ? gemv_mma_shared_bytes(d.kchunk) : gemv_shared_bytes(d.kchunk);
  d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
  d.grid = static_cast<unsigned>(std::min(tiles * d.splits, kMaxGrid));
  if (rule.gemv_mma && clusters && d.splits > 1 && d.splits <= kGemvMmaMaxCluster &&
      tiles * d.splits <= kMaxGrid) {
    d.cluster = static_cast<int>(d.splits);
    d.cluster_optional = true;
  }
  return d;
}

// 128 x 128 tiles: warpgroup MMA (`wgmma`, one or two blocks per multiprocessor: 4 or 3 stages)
// or the mma.sync wide tiles.
LaunchDims wide_dims(int64_t R, int64_t N, int64_t K, bool wgmma, bool two_blocks) {
  LaunchDims d;
  d.tensor_cores = d.wide = true;
  d.shared_bytes =
      wgmma ? gemm_wgmma_shared_bytes(two_blocks ? 3 : gemm_wgmma_stages()) : gemm_wide_shared_bytes();
  d.kchunk = std::max<int64_t>(K, 1);
  d.grid = static_cast<unsigned>(std::min(ceil_div(R, 128) * ceil_div(N, 128), kMaxGrid));
  return d;
}

LaunchDims wgmma96_dims(int64_t R, int64_t N, int64_t K, bool two_blocks) {
  LaunchDims d;
  d.tensor_cores = d.wide = d.n96 = true;  // the wide variant's (sm_90a) third entry point
  d.shared_bytes = gemm_wgmma96_shared_bytes(two_blocks ? 3 : 4);
  d.kchunk = std::max<int64_t>(K, 1);
  d.grid = static_cast<unsigned>(std::min(ceil_div(R, 128) * ceil_div(N, 96), kMaxGrid));
  return d;
}

// `splits` > 1: K split into that many ranges of whole 64-element steps, at least two steps each
// (fewer when K is short), the partial sums added by the last split of each tile (gemv.cuh's
// grape_splitk_finish). BERT at batch 1 has 12 tiles of 128 x 64 for a 768-wide product: without
// splits 12 of 132 multiprocessors work.
LaunchDims wgmma64_dims(int64_t R, int64_t N, int64_t K, int64_t splits = 1) {
  LaunchDims d;
  d.tensor_cores = d.wide = d.narrow = true;  // the wide variant's (sm_90a) second entry point
  d.shared_bytes = gemm_wgmma64_shared_bytes();
  const int64_t tiles = ceil_div(R, 128) * ceil_div(N, 64);
  if (splits > 1)
    split_k(K, tiles, tiles * splits, splits, 64, d, 128);
  else
    d.kchunk = std::max<int64_t>(K, 1);
  d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
  d.grid = static_cast<unsigned>(std::min(tiles * d.splits, kMaxGrid));
  return d;
}

// 64 x 64 wgmma tiles (two warpgroups of 64 x 32): twice the blocks of 128 x 64 tiles for the
// products those leave most multiprocessors idle on; `splits` > 1 as for wgmma64_dims, the splits
// of a tile one cluster (the only way this entry splits K).
LaunchDims wgmma_m64_dims(int64_t R, int64_t N, int64_t K, int64_t splits = 1) {
  LaunchDims d;
  d.tensor_cores = d.wide = d.m64 = true;  // the wide variant's (sm_90a) fourth entry point
  d.shared_bytes = gemm_wgmma_m64_shared_bytes();
  const int64_t tiles = ceil_div(R, 64) * ceil_div(N, 64);
  if (splits > 1) {
    split_k(K, tiles, tiles * splits, splits, 64, d, 128);
    d.cluster = static_cast<int>(splits);
  } else {
    d.kchunk = std::max<int64_t>(K, 1);
  }
  d.grid = static_cast<unsigned>(std::min(tiles * d.splits, kMaxGrid));
  return d;
}

// 64 x 64 tiles, split along K into ranges of at least `min_split_k` when they would leave
// multiprocessors idle (0: never split).
LaunchDims tiles64_dims(int64_t R, int64_t N, int64_t K, int sm_count, int64_t min_split_k) {
  LaunchDims d;
  d.tensor_cores = true;
  d.shared_bytes = kGemmSharedBytes;
  const int64_t tiles = ceil_div(R, 64) * ceil_div(N, 64);
  if (min_split_k > 0 && tiles < sm_count)
    split_k(K, tiles, 2 * int64_t{sm_count}, 1, 32, d, min_split_k);
  else
    d.kchunk = std::max<int64_t>(K, 1);
  d.scratch_bytes = splitk_scratch(tiles, d.splits, R, N);
  d.grid = static_cast<unsigned>(std::min(tiles * d.splits, kMaxGrid));
  return d;
}

// Whether a matrix-product measurement switch is set: then its choice is the only candidate, so an
// A/B measurement measures what it names.
bool product_knob_set() {
  for (const char* name : {"GRAPE_GEMM_WIDE", "GRAPE_GEMM_WGMMA_BLOCKS", "GRAPE_GEMM_WGMMA_STAGES",
                           "GRAPE_GEMM_WGMMA64", "GRAPE_GEMM_MIN_SPLIT_K", "GRAPE_GEMM_WGMMA"})
    if (const char* v = std::getenv(name); v && *v) return true;
  return false;
}

// The heuristic's choice first (launch_dims), then the alternatives the kernel's code can run.
void matrix_product(const LaunchRule& rule, int64_t R, int64_t N, int64_t K, int sm_count, bool wgmma_device,
                    bool alternatives, std::vector<LaunchCandidate>& out) {
  auto add = [&](const char* name, const LaunchDims& d) { out.push_back({name, d}); };
  if (R <= kGemvMaxRows && rule.gemv_tensor_cores) {
    // One candidate: two K splits for GPT-2's lm_head (393 tiles, 1.5 waves of two blocks per
    // multiprocessor; 786 with them) measured slower, 0.5225 against 0.5155 ms per decode step
    // (run 159): the round of partial sums costs more than the half-empty wave.
    add("tc16", gemv_tc_dims(R, N, K, sm_count));
    return;
  }
  if (R <= kGemvMaxRows) {
    // Without further K splits when the column tiles (narrowed by the code generator for this,
    // LaunchRule::gemv_cols) already give half a block per multiprocessor: a split costs a round
    // of partial sums through global memory.
    const int64_t tiles = ceil_div(N, rule.weight_kn ? rule.gemv_cols : 128);
    const bool fill = tiles * ceil_div(K, kGemvMaxKChunk) < sm_count / 2;
    add(fill ? "gemv-fill" : "gemv-nosplit", gemv_dims(rule, R, N, K, sm_count, fill, wgmma_device));
    if (alternatives)
      add(fill ? "gemv-nosplit" : "gemv-fill", gemv_dims(rule, R, N, K, sm_count, !fill, wgmma_device));
    return;
  }
  const bool wgmma = rule.wgmma && wgmma_device;
  const bool wgmma64_ok = rule.allow_wide && wgmma && gemm_wgmma64_enabled() && K % 8 == 0;
  const bool two_blocks = [&] {
    const int o = gemm_wgmma_blocks_override();
    return o == 0 ? ceil_div(R, 128) * ceil_div(N, 128) > sm_count && K >= kGemmWgmmaTwoBlocksMinK : o == 2;
  }();
  // One wave of 128 x 128 tiles that leaves multiprocessors idle where 128 x 96 tiles still make one
  // wave: the narrower tiles keep more of the GPU busy (BERT b=16's 2048-row, 768-wide products: 128
  // instead of 96 of 132 SMs busy, 8.5 instead of 9.3 us for q/k/v and 20.7 instead of 22.7 for FFN
  // down, run 48; cuBLAS takes 96 x 128 tiles there too). Not under a measurement switch.
  const int64_t tiles128 = ceil_div(R, 128) * ceil_div(N, 128), tiles96 = ceil_div(R, 128) * ceil_div(N, 96);
  const bool n96 = wgmma64_ok && !two_blocks && tiles128 < sm_count && tiles96 > tiles128 &&
                   tiles96 <= sm_count && !product_knob_set();
  if (rule.allow_wide && wide_tiles(R, N, sm_count)) {
    if (n96)
      add("wgmma96", wgmma96_dims(R, N, K, false));
    else
      add(!wgmma ? "mma128" : two_blocks ? "wgmma128x2" : "wgmma128", wide_dims(R, N, K, wgmma, two_blocks));
  } else if (wgmma64_ok && (K <= kGemmWgmma64MaxK || ceil_div(R, 128) * ceil_div(N, 64) * 2 >= sm_count))
    add("wgmma64", wgmma64_dims(R, N, K));
  else
    add("mma64", tiles64_dims(R, N, K, sm_count, gemm_min_split_k()));
  if (!alternatives) return;
  if (rule.allow_wide) {
    add(!wgmma ? "mma128" : "wgmma128", wide_dims(R, N, K, wgmma, false));
    if (wgmma) add("wgmma128x2", wide_dims(R, N, K, true, true));
  }
  if (wgmma64_ok) {
    add("wgmma96", wgmma96_dims(R, N, K, false));
    add("wgmma96x2", wgmma96_dims(R, N, K, true));
    add("wgmma64", wgmma64_dims(R, N, K));
    // K splits while the tiles leave most multiprocessors idle (BERT b=1: 12 or 48 tiles); "-k"
    // adds the partial tiles through global memory (the last split of a tile), "-c" runs a
    // tile's splits as one thread-block cluster that adds them through distributed shared memory
    // (gemm_wgmma.cuh; sm_90 only, as wgmma is).
    const int64_t tiles64 = ceil_div(R, 128) * ceil_div(N, 64);
    if (tiles64 * 2 <= sm_count)
      for (int64_t splits : {2, 4, 8}) {
        if (K < splits * 128) continue;
        const LaunchDims k = wgmma64_dims(R, N, K, splits);
        add(("wgmma64-k" + std::to_string(splits)).c_str(), k);
        if (k.splits != splits || k.grid != static_cast<unsigned>(tiles64 * splits)) continue;
        LaunchDims c = k;
        c.cluster = static_cast<int>(splits);
        add(("wgmma64-c" + std::to_string(splits)).c_str(), c);
      }
  }
  if (wgmma64_ok && ceil_div(R, 128) * ceil_div(N, 64) * 2 <= sm_count) {
    const int64_t tiles = ceil_div(R, 64) * ceil_div(N, 64);
    add("wgmma-m64", wgmma_m64_dims(R, N, K));
    for (int64_t splits : {2, 4}) {
      if (K < splits * 128 || tiles * splits > sm_count) continue;
      const LaunchDims c = wgmma_m64_dims(R, N, K, splits);
      // A cluster must hold every split of its tile, and the kernel checks the grid against it.
      if (c.splits == splits && c.grid == static_cast<unsigned>(tiles * splits))
        add(("wgmma-m64-c" + std::to_string(splits)).c_str(), c);
    }
  }
  add("mma64", tiles64_dims(R, N, K, sm_count, gemm_min_split_k()));
  add("mma64-nosplit", tiles64_dims(R, N, K, sm_count, 0));
}

// Mirrors jit/kernels/attention.cuh: `rows` query rows per block (the 8 warps split the keys of
// fewer rows), and its shared memory: q rows, per-warp k tiles, row statistics, cached scores.
int64_t attention_default_rows(int64_t S) { return S <= 1 ? 1 : S <= 2 ? 2 : S <= 4 ? 4 : 8; }
void attention(int64_t S, int64_t KV, int64_t DK, int64_t rows, LaunchDims& d, int64_t batch,
               int64_t& blocks) {
  int64_t dkp = ceil_div(DK, 32) * 32, kvp = ceil_div(KV, 32) * 32;
  int64_t floats = rows * dkp + 8 * 32 * 33 + 2 * 8;
  int64_t cached = floats + rows * kvp;
  d.splits = rows;
  d.kchunk = cached * 4 <= kAttentionMaxSharedBytes ? 1 : 0;
  d.shared_bytes = static_cast<unsigned>(4 * (d.kchunk ? cached : floats));
  blocks = batch * ceil_div(S, rows);
}

// Mirrors jit/kernels/attention_mma.cuh: 64 query rows per block, 4 warps (`keys1`: each warp all
// keys of its 16 rows), or 8 warps: 32 rows, four warps per 16 rows, each a quarter of every key
// tile (`keys4`), or where the head widths do not allow that (attention_mma_quarter_keys) 64 rows,
// two warps per 16 rows, a key half each (`keys2`); q, two k and two v tiles of 16-bit elements in
// shared memory, head widths padded to 16 and rows by 8 more. The 8-warp entry when the 64-row
// items fit on the GPU at one block per multiprocessor (registers allow no more): few items then
// run on more warps (BERT-base at batch 1: 24 items, 8.8 instead of 10.7 us with two warps per
// row group); more items have warps enough, and the split's merging costs instructions (batch 16:
// 384 items, 20.5 instead of 18.7 us, measured with the two-pass kernel).
void attention_mma(int64_t S, int64_t DK, int64_t DV, int64_t batch, int sm_count, bool alternatives,
                   std::vector<LaunchCandidate>& out) {
  LaunchDims d;
  d.shared_bytes = attention_mma_shared_bytes(DK, DV);
  const int64_t items = batch * ceil_div(S, 64);
  const int first = items <= sm_count ? 2 : 1;
  for (int keys : {first, 3 - first}) {
    if (keys != first && !alternatives) break;
    d.block = 128u * static_cast<unsigned>(keys);
    d.tensor_cores = keys == 2;  // the kernel's second entry point
    const int64_t rows = keys == 2 ? attention_mma_split_rows(DK, DV) : 64;
    d.grid = static_cast<unsigned>(std::clamp<int64_t>(batch * ceil_div(S, rows), 1, kMaxGrid));
    out.push_back({keys == 2 && rows == 32 ? std::string("keys4") : "keys" + std::to_string(keys), d});
  }
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

int64_t topk_elements_per_block() {
  static const int e =
      env_knob("GRAPE_TOPK_PER_BLOCK", 256, 1 << 20, static_cast<int>(kTopKElementsPerBlock));
  return e;
}

unsigned gemm_wide_shared_bytes() {
  return static_cast<unsigned>(gemm_wide_stages() * 2 * (128 * 40 + 128 * 40) + 128 * 8);
}

bool gemm_wgmma_device(const std::string& arch) {
  static const bool on = env_knob("GRAPE_GEMM_WGMMA", 0, 1, 1) == 1;
  return on && arch == "sm_90";
}

int gemv_dependent_launch() {
  static const int mode = env_knob("GRAPE_GEMV_PDL", 0, 3, 3);
  return mode;
}

bool update_launch_dependents_early() {
  static const bool on = env_knob("GRAPE_UPDATE_PDL_EARLY", 0, 1, 1) == 1;
  return on;
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

int gemm_wgmma64_stages() {
  static const int s = env_knob("GRAPE_GEMM_WGMMA64_STAGES", 3, 8, kGemmWgmma64Stages);
  return s;
}

int gemm_wgmma_m64_stages() {
  static const int s = env_knob("GRAPE_GEMM_WGMMA_M64_STAGES", 3, 8, kGemmWgmmaM64Stages);
  return s;
}

unsigned gemm_wgmma64_shared_bytes() { return wgmma_shared_bytes(gemm_wgmma64_stages(), 64); }

unsigned gemm_wgmma96_shared_bytes(int stages) { return wgmma_shared_bytes(stages, 96); }

unsigned gemm_wgmma_m64_shared_bytes() {
  return static_cast<unsigned>(gemm_wgmma_m64_stages() * (64 + 64) * 128 + 1024);
}

unsigned gemm_wgmma_max_shared_bytes() { return gemm_wgmma_shared_bytes(std::max(3, gemm_wgmma_stages())); }

bool gemv_uses_tensor_cores() {
  static const bool on = env_knob("GRAPE_GEMV_TC", 0, 1, 0) == 1;
  return on;
}

int64_t gemv_mma_max_splits() {
  static const int s = env_knob("GRAPE_GEMV_MMA_SPLITS", 1, static_cast<int>(kGemvMmaMaxCluster),
                                static_cast<int>(kGemvMmaMaxCluster));
  return s;
}

bool gemv_kn_mma_enabled() {
  static const bool on = env_knob("GRAPE_GEMV_MMA", 0, 1, 1) == 1;
  return on;
}

bool gemv_weight_tma() {
  static const bool on = env_knob("GRAPE_GEMV_TMA", 0, 1, 1) == 1;
  return on;
}

bool gemv_async_exchange() {
  static const bool on = env_knob("GRAPE_GEMV_XCHG", 0, 1, 1) == 1;
  return on;
}

bool kernel_timeline() {
  // Read at every use (a program decides once, when it is built): a test turns it on for one session.
  const char* f = std::getenv("GRAPE_KERNEL_TIMELINE");
  return f && *f;
}

bool gemv_on_tensor_cores(const ir::Dim& n) {
  return gemv_uses_tensor_cores() || (n.is_const() && n.const_value() >= kGemvTensorCoreMinColumns);
}

size_t topk_scratch_bytes(int64_t rows, int64_t splits, int k) {
  return static_cast<size_t>(rows) * 8 + static_cast<size_t>(rows * splits * k) * 8;
}

namespace {
// Every configuration of the launch the kernel's code can run, the heuristic's first; only that
// one unless `alternatives`.
std::vector<LaunchCandidate> candidates(const LaunchRule& rule, const std::map<std::string, int64_t>& dims,
                                        int sm_count, bool wgmma_device, bool alternatives) {
  std::vector<LaunchCandidate> out;
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
        int64_t splits = std::clamp<int64_t>(std::min(len / topk_elements_per_block(), 2 * sm_count / n), 1,
                                             kTopKMaxSplits);
        d.splits = splits;
        blocks = n * splits;
        if (splits > 1) d.scratch_bytes = topk_scratch_bytes(n, splits, rule.topk_k);
      }
      if (rule.cluster_rows && wgmma_device && n > 0) {
        // A few long rows, one block each, leave most of the GPU idle (a beam search's log_softmax:
        // 5 rows of 50257 on 5 SMs); a cluster of blocks per row reads it nc times as fast.
        const int64_t len = std::max<int64_t>(0, rule.row_len.eval(dims));
        const int64_t nc =
            std::clamp<int64_t>(std::min(len / kRowClusterMinPerBlock, 2 * sm_count / n), 1, kRowClusterMax);
        if (nc > 1) {
          d.cluster = static_cast<int>(nc);
          blocks = n * nc;
        }
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
      matrix_product(rule, item(0), item(1), item(2), sm_count, wgmma_device, alternatives, out);
      break;
    case LaunchRule::Attention:
      if (rule.attention_mma) {
        attention_mma(item(1), item(3), item(4), item(0), sm_count, alternatives, out);
      } else {
        // Fewer query rows per block: more blocks, each with fewer warps per row's keys.
        const int64_t S = item(1), first = attention_default_rows(S);
        for (int64_t rows = first; rows >= 1; rows /= 2) {
          if (rows != first && !alternatives) break;
          LaunchDims a = d;
          attention(S, item(2), item(3), rows, a, item(0), blocks);
          a.grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
          out.push_back({"rows" + std::to_string(rows), a});
        }
      }
      break;
  }
  if (out.empty()) {
    d.grid = static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, kMaxGrid));
    out.push_back({"", d});
  }
  for (LaunchCandidate& c : out) {
    if (!rule.attention_mma) c.dims.block = static_cast<unsigned>(rule.threads);  // it picks its own
    c.dims.grid = std::max(c.dims.grid, 1u);
  }
  // The same configuration under two names (a product too small for K splits): keep the first.
  std::vector<LaunchCandidate> unique;
  for (const LaunchCandidate& c : out)
    if (std::none_of(unique.begin(), unique.end(),
                     [&](const LaunchCandidate& u) { return same_launch(u.dims, c.dims); }))
      unique.push_back(c);
  return unique;
}
}  // namespace

bool same_launch(const LaunchDims& a, const LaunchDims& b) {
  return a.grid == b.grid && a.block == b.block && a.shared_bytes == b.shared_bytes && a.splits == b.splits &&
         a.kchunk == b.kchunk && a.tensor_cores == b.tensor_cores && a.wide == b.wide &&
         a.narrow == b.narrow && a.n96 == b.n96 && a.m64 == b.m64 && a.scratch_bytes == b.scratch_bytes &&
         a.cluster == b.cluster && a.cluster_optional == b.cluster_optional;
}

LaunchDims launch_dims(const LaunchRule& rule, const std::map<std::string, int64_t>& dims, int sm_count,
                       bool wgmma_device) {
  return candidates(rule, dims, sm_count, wgmma_device, false).front().dims;
}

std::vector<LaunchCandidate> launch_candidates(const LaunchRule& rule,
                                               const std::map<std::string, int64_t>& dims, int sm_count,
                                               bool wgmma_device) {
  const bool knob = rule.kind == LaunchRule::MatrixProduct && product_knob_set();
  return candidates(rule, dims, sm_count, wgmma_device, !knob);
}

}  // namespace grape::scheduler
