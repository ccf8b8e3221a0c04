// Autotuning without a GPU: the launch configurations a kernel may be timed in
// (scheduler::launch_candidates), the tuning cache's file (runtime/cuda/tuning_cache.h) and the
// choice among measured times (runtime/cuda/autotune.h). The timing itself runs on the GPU
// (tests/gpu/autotune_test.cpp).
#include "runtime/cuda/autotune.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/tuning_cache.h"
#include "scheduler/launch.h"

namespace grape {
namespace {

namespace fs = std::filesystem;
using scheduler::LaunchCandidate;
using scheduler::LaunchRule;

LaunchRule product(int64_t R, int64_t N, int64_t K, bool weight_kn, bool wgmma) {
  LaunchRule r;
  r.kind = LaunchRule::MatrixProduct;
  r.threads = 256;
  r.items = {ir::Dim(R), ir::Dim(N), ir::Dim(K)};
  r.weight_kn = weight_kn;
  r.wgmma = wgmma;
  return r;
}

std::vector<std::string> names(const std::vector<LaunchCandidate>& c) {
  std::vector<std::string> n;
  for (const auto& x : c) n.push_back(x.name);
  return n;
}

TEST(LaunchCandidates, TheHeuristicsChoiceComesFirstAndEachConfigurationOnce) {
  // BERT b=16's q/k/v on an H100: 96 tiles of 128 x 128 leave 36 SMs idle, 128 tiles of 128 x 96
  // fewer: the heuristic takes the narrower ones, one wgmma block per multiprocessor.
  const LaunchRule qkv = product(2048, 768, 768, false, true);
  const auto c = scheduler::launch_candidates(qkv, {}, 132, true);
  // 384 tiles of 64 x 64 fill the GPU without K splits, so "mma64-nosplit" is "mma64" and dropped.
  EXPECT_EQ(names(c),
            (std::vector<std::string>{"wgmma96", "wgmma128", "wgmma128x2", "wgmma96x2", "wgmma64", "mma64"}));
  EXPECT_TRUE(scheduler::same_launch(c[0].dims, scheduler::launch_dims(qkv, {}, 132, true)));
  EXPECT_EQ(c[0].dims.grid, 128u);  // 128 x 96 tiles: 16 x 8
  EXPECT_TRUE(c[0].dims.n96 && c[0].dims.wide && !c[0].dims.narrow);
  EXPECT_EQ(c[1].dims.grid, 96u);
  EXPECT_LT(c[3].dims.shared_bytes, c[0].dims.shared_bytes);  // two blocks: 3 stages
  EXPECT_EQ(c[4].dims.grid, 192u);                            // 128 x 64 tiles
  EXPECT_TRUE(c[4].dims.narrow && c[4].dims.wide);
  EXPECT_EQ(c[5].dims.grid, 32u * 12u);  // 64 x 64 tiles: enough of them, no K split either
  for (size_t i = 0; i < c.size(); ++i)
    for (size_t j = i + 1; j < c.size(); ++j)
      EXPECT_FALSE(scheduler::same_launch(c[i].dims, c[j].dims)) << i << " " << j;
  // Two blocks per multiprocessor: 3 stages, less shared memory than one block's 4.
  EXPECT_LT(c[2].dims.shared_bytes, c[1].dims.shared_bytes);
  // BERT b=16's FFN up (768 -> 3072): 384 tiles of 128 x 128, more than a wave either way (K = 768
  // too short for two blocks per multiprocessor).
  const auto up = scheduler::launch_candidates(product(2048, 3072, 768, false, true), {}, 132, true);
  EXPECT_EQ(up[0].name, "wgmma128");
  // Without wgmma (not sm_90) the mma.sync wide tiles stay.
  EXPECT_EQ(scheduler::launch_candidates(product(2048, 768, 768, false, false), {}, 132, false)[0].name,
            "mma128");
}

TEST(LaunchCandidates, SmallProductsTrySplitsAndDeviceWithoutWgmmaHasNone) {
  // BERT b=1 FFN down without wgmma (not sm_90): the 64 x 64 tiles split K by default.
  const auto c = scheduler::launch_candidates(product(128, 768, 3072, false, true), {}, 132, false);
  EXPECT_EQ(names(c), (std::vector<std::string>{"mma64", "mma128", "mma64-nosplit"}));
  EXPECT_GT(c[0].dims.splits, 1);
  EXPECT_GT(c[0].dims.scratch_bytes, 0u);
  EXPECT_EQ(c[2].dims.splits, 1);
  EXPECT_EQ(c[2].dims.scratch_bytes, 0u);
  // A decode GEMV (5 rows, W [K][N]): with and without the K splits that fill the GPU.
  LaunchRule gemv = product(5, 768, 3072, true, false);
  gemv.gemv_cols = 32;
  const auto g = scheduler::launch_candidates(gemv, {}, 132, true);
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0].name, "gemv-fill");  // 24 column tiles: too few without splits
  EXPECT_EQ(g[1].name, "gemv-nosplit");
  EXPECT_GT(g[0].dims.splits, g[1].dims.splits);
  EXPECT_EQ(g[1].dims.splits, 2);  // K 3072 needs two ranges of shared memory anyway
}

// gemv_mma.cuh's launches (GPT-2's layer products at 5 rows): K splits up to 8 per 64-column tile,
// one thread-block cluster per tile on a device with clusters (the splits add on chip; the kernel
// also runs without, so the mono executor may take it), none on an older device; its shared
// memory has room for the 16-byte pad of A's rows.
TEST(LaunchCandidates, TensorCoreGemvSplitsAreOneClusterPerTile) {
  auto mma = [](int64_t n, int64_t k) {
    LaunchRule r = product(5, n, k, true, false);
    r.gemv_cols = 64;
    r.gemv_mma = true;
    return r;
  };
  struct Want {
    int64_t n, k, splits;
  };
  for (const Want& w : {Want{2304, 768, 6}, Want{768, 768, 6}, Want{3072, 768, 4}, Want{768, 3072, 8}}) {
    const auto d = scheduler::launch_dims(mma(w.n, w.k), {}, 132, true);
    EXPECT_EQ(d.splits, w.splits) << w.n << " x " << w.k;
    EXPECT_EQ(d.grid, static_cast<unsigned>(w.n / 64 * w.splits));
    EXPECT_EQ(d.cluster, w.splits);
    EXPECT_TRUE(d.cluster_optional);
    EXPECT_EQ(d.shared_bytes, scheduler::gemv_mma_shared_bytes(d.kchunk));
    EXPECT_GT(d.scratch_bytes, 0u);  // the splits' partial sums where the kernel runs unclustered
    const auto old = scheduler::launch_dims(mma(w.n, w.k), {}, 132, false);
    EXPECT_EQ(old.cluster, 1);
    EXPECT_EQ(old.splits, w.splits);
  }
  // No split, no cluster: many tiles and a K within one range.
  const auto wide = scheduler::launch_dims(mma(16384, 1024), {}, 132, true);
  EXPECT_EQ(wide.splits, 1);
  EXPECT_EQ(wide.cluster, 1);
}

TEST(LaunchCandidates, AVocabularyProjectionHasOneConfiguration) {
  // GPT-2's lm_head at batch 5 on the tensor cores: 393 tiles of 16 x 128, no K split (two splits
  // measured slower, run 159).
  LaunchRule lm = product(5, 50257, 768, false, false);
  lm.gemv_tensor_cores = true;
  const auto c = scheduler::launch_candidates(lm, {}, 132, true);
  ASSERT_EQ(names(c), (std::vector<std::string>{"tc16"}));
  EXPECT_EQ(c[0].dims.splits, 1);
  EXPECT_EQ(c[0].dims.grid, 393u);
  EXPECT_EQ(c[0].dims.scratch_bytes, 0u);
  EXPECT_EQ(c[0].dims.shared_bytes, scheduler::kGemvTcSharedBytes);
  EXPECT_LE(c[0].dims.kchunk, scheduler::kGemvTcMaxKChunk);
  // A K longer than kGemvTcMaxKChunk (A is staged whole per K range): split into ranges that fit,
  // whole 32-element steps, the partial sums in the scratch area.
  for (int64_t k : {1025, 1100, 4096}) {
    LaunchRule r = product(7, 32800, k, false, false);
    r.gemv_tensor_cores = true;
    const scheduler::LaunchDims d = scheduler::launch_candidates(r, {}, 132, true).at(0).dims;
    EXPECT_GT(d.splits, 1) << k;
    EXPECT_LE(d.kchunk, scheduler::kGemvTcMaxKChunk) << k;
    EXPECT_EQ(d.kchunk % 32, 0) << k;
    EXPECT_GE(d.kchunk * d.splits, k) << k;
    EXPECT_GT(d.scratch_bytes, 0u) << k;
    EXPECT_EQ(d.grid, 257u * static_cast<unsigned>(d.splits)) << k;
  }
}

TEST(LaunchCandidates, FewWgmmaTilesTryKSplits) {
  // BERT b=1 FFN down on an H100: 12 tiles of 128 x 64 over K = 3072; split in 2, 4 or 8 ranges of
  // whole 64-element steps, each tile's splits meeting in the scratch area.
  const auto c = scheduler::launch_candidates(product(128, 768, 3072, false, true), {}, 132, true);
  std::map<std::string, scheduler::LaunchDims> by;
  for (const auto& x : c) by[x.name] = x.dims;
  for (int64_t splits : {2, 4, 8}) {
    const std::string n = "wgmma64-k" + std::to_string(splits);
    ASSERT_TRUE(by.count(n)) << n;
    const scheduler::LaunchDims& d = by[n];
    EXPECT_EQ(d.splits, splits) << n;
    EXPECT_EQ(d.kchunk % 64, 0) << n;
    EXPECT_EQ(d.kchunk * splits, 3072) << n;
    EXPECT_EQ(d.grid, 12u * static_cast<unsigned>(splits)) << n;
    EXPECT_GT(d.scratch_bytes, 0u) << n;
    EXPECT_TRUE(d.narrow && d.wide) << n;
  }
  // The same splits as thread-block clusters: one block per item, cluster == splits.
  for (int64_t splits : {2, 4, 8}) {
    const std::string n = "wgmma64-c" + std::to_string(splits);
    ASSERT_TRUE(by.count(n)) << n;
    EXPECT_EQ(by[n].cluster, splits) << n;
    EXPECT_EQ(by[n].splits, splits) << n;
    EXPECT_EQ(by[n].grid, 12u * static_cast<unsigned>(splits)) << n;
    EXPECT_EQ(by["wgmma64-k" + std::to_string(splits)].cluster, 1) << n;
  }
  EXPECT_EQ(by.at("wgmma64").splits, 1);
  // q/k/v (K = 768): at least two steps per range, so no 8-way split.
  const auto q = names(scheduler::launch_candidates(product(128, 768, 768, false, true), {}, 132, true));
  EXPECT_NE(std::find(q.begin(), q.end(), "wgmma64-k4"), q.end());
  EXPECT_EQ(std::find(q.begin(), q.end(), "wgmma64-k8"), q.end());
  // Tiles that fill more than half the GPU (b=16: 192 of them) are not split.
  for (const auto& n :
       names(scheduler::launch_candidates(product(2048, 768, 768, false, true), {}, 132, true)))
    EXPECT_EQ(n.find("-k"), std::string::npos) << n;
}

TEST(LaunchCandidates, AttentionTriesFewerQueryRowsPerBlock) {
  LaunchRule a;
  a.kind = LaunchRule::Attention;
  a.threads = 256;
  a.items = {ir::Dim(60), ir::Dim(8), ir::Dim(129), ir::Dim(64), ir::Dim(64)};
  const auto c = scheduler::launch_candidates(a, {}, 132, true);
  EXPECT_EQ(names(c), (std::vector<std::string>{"rows8", "rows4", "rows2", "rows1"}));
  EXPECT_EQ(c[0].dims.grid, 60u);
  EXPECT_EQ(c[3].dims.grid, 480u);
  EXPECT_EQ(c[3].dims.splits, 1);
  a.items[1] = ir::Dim(1);  // decode: one query row, one configuration
  EXPECT_EQ(scheduler::launch_candidates(a, {}, 132, true).size(), 1u);
}

TEST(LaunchCandidates, TensorCoreAttentionSplitsTheKeysWhenItemsAreFew) {
  LaunchRule a;
  a.kind = LaunchRule::Attention;
  a.attention_mma = true;
  a.threads = 256;
  // BERT-base at batch 1 (12 x 128 rows: 24 items of 64 rows): the 8-warp entry first, there 32
  // rows per block, four warps per 16 rows (48 blocks), then the 64-row items of one warp each.
  a.items = {ir::Dim(12), ir::Dim(128), ir::Dim(128), ir::Dim(64), ir::Dim(64)};
  auto c = scheduler::launch_candidates(a, {}, 132, true);
  ASSERT_EQ(names(c), (std::vector<std::string>{"keys4", "keys1"}));
  EXPECT_EQ(c[0].dims.block, 256u);
  EXPECT_TRUE(c[0].dims.tensor_cores);  // the kernel's second entry point
  EXPECT_EQ(c[0].dims.grid, 48u);
  EXPECT_EQ(c[1].dims.block, 128u);
  EXPECT_EQ(c[1].dims.grid, 24u);
  for (const auto& x : c) EXPECT_EQ(x.dims.shared_bytes, scheduler::attention_mma_shared_bytes(64, 64));
  // Head widths of 16: the output's two column blocks do not split four ways, so the 8-warp entry
  // keeps 64 rows, two warps per 16 rows.
  a.items[3] = a.items[4] = ir::Dim(16);
  c = scheduler::launch_candidates(a, {}, 132, true);
  ASSERT_EQ(names(c), (std::vector<std::string>{"keys2", "keys1"}));
  EXPECT_EQ(c[0].dims.grid, 24u);
  a.items[3] = a.items[4] = ir::Dim(64);
  // Batch 16: 384 items, more than one block of 8 warps per multiprocessor: one warp each.
  a.items[0] = ir::Dim(16 * 12);
  c = scheduler::launch_candidates(a, {}, 132, true);
  ASSERT_EQ(names(c), (std::vector<std::string>{"keys1", "keys4"}));
  EXPECT_EQ(c[0].dims.block, 128u);
  EXPECT_EQ(c[1].dims.grid, 16u * 12u * 4u);
  EXPECT_EQ(scheduler::launch_dims(a, {}, 132).block, 128u);
}

// Which head widths take four warps per 16 rows: the output's column blocks of 8 split four ways
// and the partial outputs of three warps fit in the k and v tiles (the kernel's own static_assert
// covers the first; this the second, at the widest heads).
TEST(LaunchCandidates, TensorCoreAttentionQuarterKeysWhereTheWidthsAllow) {
  EXPECT_TRUE(scheduler::attention_mma_quarter_keys(64, 64));
  EXPECT_TRUE(scheduler::attention_mma_quarter_keys(128, 128));
  EXPECT_TRUE(scheduler::attention_mma_quarter_keys(40, 24));    // padded to 48, 32
  EXPECT_FALSE(scheduler::attention_mma_quarter_keys(64, 16));   // two column blocks
  EXPECT_FALSE(scheduler::attention_mma_quarter_keys(64, 48));   // six
  EXPECT_FALSE(scheduler::attention_mma_quarter_keys(16, 128));  // 3 x 128 x 128 bytes > the tiles
  EXPECT_EQ(scheduler::attention_mma_split_rows(64, 64), 32);
  EXPECT_EQ(scheduler::attention_mma_split_rows(64, 16), 64);
}

TEST(LaunchCandidates, AMeasurementSwitchLeavesOnlyItsChoice) {
  ::setenv("GRAPE_GEMM_MIN_SPLIT_K", "256", 1);
  const auto c = scheduler::launch_candidates(product(2048, 768, 768, false, true), {}, 132, true);
  ::unsetenv("GRAPE_GEMM_MIN_SPLIT_K");
  EXPECT_EQ(c.size(), 1u);
}

TEST(Autotune, KeepsTheHeuristicsChoiceUnlessAnotherIsClearlyFaster) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(cuda::pick_fastest({10.0, 9.8, 12.0}), 0u);  // 2% is noise
  EXPECT_EQ(cuda::pick_fastest({10.0, 9.0, 9.5}), 1u);
  EXPECT_EQ(cuda::pick_fastest({inf, 20.0, 30.0}), 1u);  // the first could not launch
  EXPECT_EQ(cuda::pick_fastest({5.0, inf}), 0u);
  EXPECT_EQ(cuda::pick_fastest({}), 0u);
}

TEST(Autotune, KeySeparatesSourcesBucketsCandidateSetsAndDevices) {
  const std::vector<LaunchCandidate> two = {{"a", {}}, {"b", {}}}, three = {{"a", {}}, {"b", {}}, {"c", {}}};
  const auto key = [&](const std::string& src, const std::vector<LaunchCandidate>& c,
                       std::vector<int64_t> sizes, const std::string& dev) {
    return cuda::tuning_key(src, c, sizes, dev, "sm_90", 132).hex();
  };
  const std::string base = key("k", two, {16, 768, 768}, "H100");
  EXPECT_EQ(base, key("k", two, {16, 768, 768}, "H100"));
  std::set<std::string> all = {base, key("k2", two, {16, 768, 768}, "H100"),
                               key("k", three, {16, 768, 768}, "H100"), key("k", two, {32, 768, 768}, "H100"),
                               key("k", two, {16, 768, 768}, "H200")};
  EXPECT_EQ(all.size(), 5u);
}

class TuningCacheFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grape-tuning-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    path_ = (dir_ / "tuning" / "tuning.txt").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  cuda::TuningCache open(std::vector<std::string>* problems) {
    return cuda::TuningCache(
        path_, [problems](const std::string&, const std::string& p) { problems->push_back(p); });
  }
  std::string read() {
    std::ifstream in(path_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  fs::path dir_;
  std::string path_;
};

jit::Hash128 key_of(uint64_t n) { return jit::Hash128{n, ~n}; }

TEST_F(TuningCacheFile, DecisionsSurviveASaveAndConcurrentWritersMerge) {
  std::vector<std::string> problems;
  {
    cuda::TuningCache a = open(&problems), b = open(&problems);
    EXPECT_FALSE(a.lookup(key_of(1)));
    a.record(key_of(1), {"wgmma128x2", 12.5});
    b.record(key_of(2), {"rows4", 3.25});
    a.save();
    b.save();  // reads a's entry back before writing
    EXPECT_EQ(b.lookup(key_of(1))->choice, "wgmma128x2");
  }
  cuda::TuningCache c = open(&problems);
  ASSERT_TRUE(c.lookup(key_of(1)));
  EXPECT_EQ(c.lookup(key_of(1))->choice, "wgmma128x2");
  EXPECT_DOUBLE_EQ(c.lookup(key_of(1))->us, 12.5);
  EXPECT_EQ(c.lookup(key_of(2))->choice, "rows4");
  EXPECT_EQ(c.size(), 2u);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(read().rfind("grape-tuning 1\n", 0), 0u);
  for (const auto& e : fs::directory_iterator(dir_ / "tuning"))  // no temporary files left
    EXPECT_EQ(e.path().filename(), "tuning.txt");
}

TEST_F(TuningCacheFile, ADamagedLineIsReportedOnceIgnoredAndDroppedAtTheNextSave) {
  std::vector<std::string> problems;
  {
    cuda::TuningCache a = open(&problems);
    a.record(key_of(1), {"mma64", 40});
    a.record(key_of(2), {"gemv-fill", 7});
    a.save();
  }
  std::string text = read();
  const size_t at = text.find("gemv-fill");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 9, "gemv-fall");  // a flipped byte: the check no longer matches
  std::ofstream(path_) << text << "not a line\n";
  cuda::TuningCache b = open(&problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("2 damaged lines ignored"), std::string::npos) << problems[0];
  EXPECT_EQ(b.ignored_lines(), 2u);
  EXPECT_TRUE(b.lookup(key_of(1)));
  EXPECT_FALSE(b.lookup(key_of(2)));  // measured again
  b.record(key_of(2), {"gemv-nosplit", 6});
  b.save();
  problems.clear();
  cuda::TuningCache c = open(&problems);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(c.lookup(key_of(2))->choice, "gemv-nosplit");
  EXPECT_EQ(read().find("gemv-fall"), std::string::npos);
  // grape cache clear: the file and any temporary file of an unfinished save go.
  std::ofstream(path_ + ".tmp.abc123") << "partial";
  cuda::TuningCache::remove(path_);
  EXPECT_FALSE(fs::exists(path_));
  EXPECT_FALSE(fs::exists(path_ + ".tmp.abc123"));
  EXPECT_NO_THROW(cuda::TuningCache::remove(path_));  // nothing left: no error
}

TEST_F(TuningCacheFile, AnotherFormatVersionIsIgnoredAsAWhole) {
  fs::create_directories(dir_ / "tuning");
  std::ofstream(path_) << "grape-tuning 99\n"
                       << cuda::TuningCache::format_line(key_of(1), {"mma64", 1}) << "\n";
  std::vector<std::string> problems;
  cuda::TuningCache a = open(&problems);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("not a version 1 tuning file"), std::string::npos);
  EXPECT_FALSE(a.lookup(key_of(1)));
}

TEST(TuningCacheLine, RoundTripsAndRejectsWhatItDidNotWrite) {
  const std::string line = cuda::TuningCache::format_line(key_of(7), {"wgmma64", 1.5});
  const auto parsed = cuda::TuningCache::parse_line(line);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->first, key_of(7));
  EXPECT_EQ(parsed->second.choice, "wgmma64");
  for (const std::string& bad : {std::string(""), line + " x", line.substr(1), "zz" + line.substr(2)})
    EXPECT_FALSE(cuda::TuningCache::parse_line(bad)) << bad;
  std::vector<std::string> problems;
  cuda::TuningCache mem("", [&](const std::string&, const std::string& p) { problems.push_back(p); });
  EXPECT_THROW(mem.record(key_of(1), {"has space", 1}), Error);
  mem.record(key_of(1), {"ok", 1});
  mem.save();  // in memory: nothing written, no error
  EXPECT_EQ(mem.lookup(key_of(1))->choice, "ok");
}

}  // namespace
}  // namespace grape
