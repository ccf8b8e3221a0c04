#include "jit/kernel_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <thread>

#include "jit/hash.h"
#include "jit_test_util.h"
#include "base/error.h"

namespace grape::jit {
namespace {

using testing::listing;
using testing::read_bytes;
using testing::ScopedEnv;
using testing::TempDir;
using testing::write_bytes;

CacheEntry sample_entry() {
  CacheEntry e;
  for (int i = 0; i < 5000; ++i) e.cubin.push_back(static_cast<std::uint8_t>((i * 7) ^ (i >> 3)));
  e.ptx = ".version 9.0\n.target sm_90\n.address_size 64\n// a PTX body that compresses well\n";
  for (int i = 0; i < 50; ++i) e.ptx += "  add.f32 %f" + std::to_string(i) + ", %f1, %f2;\n";
  e.log = "k.cu(3): warning #177-D: variable \"unused\" was declared but never referenced";
  return e;
}

Hash128 sample_key() { return cache_key(KeyInputs::for_compile("__global__ void k() {}", "13.0", "sm_90", {})); }

void expect_same(const CacheEntry& a, const CacheEntry& b) {
  EXPECT_EQ(a.cubin, b.cubin);
  EXPECT_EQ(a.ptx, b.ptx);
  EXPECT_EQ(a.log, b.log);
}

// A cache in a fresh folder whose reports are collected, not printed.
struct CacheFixture : ::testing::Test {
  TempDir tmp;
  KernelCache cache{tmp.sub("kernels")};
  std::vector<std::pair<std::string, std::string>> reports;
  void SetUp() override {
    cache.set_reporter([this](const std::string& path, const std::string& problem) {
      reports.emplace_back(path, problem);
    });
  }
};

TEST_F(CacheFixture, RoundTrip) {
  Hash128 key = sample_key();
  EXPECT_FALSE(cache.lookup(key).has_value());
  CacheEntry entry = sample_entry();
  cache.store(key, entry);
  std::optional<CacheEntry> hit = cache.lookup(key);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, entry);
  EXPECT_TRUE(reports.empty());

  // The payload is compressed: the file is smaller than what it holds.
  std::string file = read_bytes(cache.entry_path(key));
  EXPECT_LT(file.size(), entry.cubin.size() + entry.ptx.size());
  EXPECT_EQ(file.substr(0, 8), "GRPKCACH");
}

TEST_F(CacheFixture, EmptySectionsRoundTrip) {
  Hash128 key = sample_key();
  CacheEntry entry;
  entry.ptx = "ptx only";
  cache.store(key, entry);
  std::optional<CacheEntry> hit = cache.lookup(key);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, entry);
}

TEST_F(CacheFixture, EntryFileNameIsTheKey) {
  Hash128 key = sample_key();
  EXPECT_EQ(cache.entry_path(key), tmp.sub("kernels") + "/" + key.hex() + ".grpk");
  EXPECT_EQ(key.hex().size(), 32u);
}

TEST_F(CacheFixture, StoreLeavesNoTemporaryFiles) {
  Hash128 key = sample_key();
  cache.store(key, sample_entry());
  cache.store(key, sample_entry());  // overwriting too
  EXPECT_EQ(listing(cache.dir()), std::vector<std::string>{key.hex() + ".grpk"});
}

TEST_F(CacheFixture, ConcurrentWritersOfOneKeyAreHarmless) {
  Hash128 key = sample_key();
  CacheEntry entry = sample_entry();
  std::atomic<int> failures{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 8; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        try {
          cache.store(key, entry);
          std::optional<CacheEntry> hit = cache.lookup(key);
          if (!hit || hit->cubin != entry.cubin) ++failures;
        } catch (...) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_TRUE(reports.empty());
  EXPECT_EQ(listing(cache.dir()), std::vector<std::string>{key.hex() + ".grpk"});
}

// Each way an entry can go bad: the lookup misses, reports the file once, deletes it, and a new store
// rebuilds a valid entry.
struct Corruption {
  const char* name;
  std::string (*damage)(std::string file);
  const char* problem;  // part of the report
};

class CorruptionTest : public CacheFixture, public ::testing::WithParamInterface<Corruption> {};

TEST_P(CorruptionTest, DetectedReportedOnceAndRebuilt) {
  const Corruption& c = GetParam();
  Hash128 key = sample_key();
  CacheEntry entry = sample_entry();
  cache.store(key, entry);
  const std::string path = cache.entry_path(key);
  write_bytes(path, c.damage(read_bytes(path)));

  EXPECT_FALSE(cache.lookup(key).has_value());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_EQ(reports[0].first, path);
  EXPECT_NE(reports[0].second.find(c.problem), std::string::npos) << reports[0].second;
  EXPECT_NE(reports[0].second.find("rebuilt"), std::string::npos) << reports[0].second;
  EXPECT_FALSE(std::filesystem::exists(path));

  EXPECT_FALSE(cache.lookup(key).has_value());  // now a plain miss
  EXPECT_EQ(reports.size(), 1u);

  cache.store(key, entry);
  std::optional<CacheEntry> hit = cache.lookup(key);
  ASSERT_TRUE(hit.has_value());
  expect_same(*hit, entry);
  EXPECT_EQ(reports.size(), 1u);
}

std::string flip_last_payload_byte(std::string f) {
  f.back() ^= 0x01;
  return f;
}
std::string flip_middle_payload_byte(std::string f) {
  f[80 + (f.size() - 80) / 2] ^= 0x40;
  return f;
}
std::string truncate_payload(std::string f) { return f.substr(0, f.size() - 7); }
std::string truncate_header(std::string f) { return f.substr(0, 40); }
std::string wrong_magic(std::string f) {
  f[0] = 'X';
  return f;
}
std::string wrong_schema(std::string f) {
  f[8] = static_cast<char>(kCacheSchemaVersion + 1);
  return f;
}
std::string flip_length_field(std::string f) {
  f[33] ^= 0x01;  // cubin size
  return f;
}
std::string zero_length(std::string) { return ""; }
std::string trailing_garbage(std::string f) { return f + "junk"; }

INSTANTIATE_TEST_SUITE_P(
    KernelCache, CorruptionTest,
    ::testing::Values(Corruption{"FlippedLastPayloadByte", flip_last_payload_byte, "corrupt entry"},
                      Corruption{"FlippedMiddlePayloadByte", flip_middle_payload_byte, "corrupt entry"},
                      Corruption{"TruncatedPayload", truncate_payload, "truncated"},
                      Corruption{"TruncatedHeader", truncate_header, "truncated"},
                      Corruption{"WrongMagic", wrong_magic, "wrong magic"},
                      Corruption{"WrongSchemaVersion", wrong_schema, "schema version"},
                      Corruption{"FlippedLengthField", flip_length_field, "header checksum"},
                      Corruption{"ZeroLength", zero_length, "empty file"},
                      Corruption{"TrailingGarbage", trailing_garbage, "trailing bytes"}),
    [](const ::testing::TestParamInfo<Corruption>& info) { return std::string(info.param.name); });

TEST_F(CacheFixture, EntryUnderTheWrongNameIsRejected) {
  Hash128 key = sample_key();
  Hash128 other = cache_key(KeyInputs::for_compile("other source", "13.0", "sm_90", {}));
  cache.store(other, sample_entry());
  std::filesystem::rename(cache.entry_path(other), cache.entry_path(key));
  EXPECT_FALSE(cache.lookup(key).has_value());
  ASSERT_EQ(reports.size(), 1u);
  EXPECT_NE(reports[0].second.find("different key"), std::string::npos);
}

TEST_F(CacheFixture, InfoAndClear) {
  EXPECT_EQ(cache.info().entries, 0u);
  EXPECT_EQ(cache.info().dir, tmp.sub("kernels"));
  Hash128 a = cache_key(KeyInputs::for_compile("a", "13.0", "sm_90", {}));
  Hash128 b = cache_key(KeyInputs::for_compile("b", "13.0", "sm_90", {}));
  cache.store(a, sample_entry());
  cache.store(b, sample_entry());
  write_bytes(cache.dir() + "/" + a.hex() + ".grpk.tmp.abc123", "left by a crashed writer");
  write_bytes(cache.dir() + "/README", "not ours");
  CacheInfo info = cache.info();
  EXPECT_EQ(info.entries, 2u);
  EXPECT_EQ(info.bytes, std::filesystem::file_size(cache.entry_path(a)) + std::filesystem::file_size(cache.entry_path(b)));
  cache.clear();
  EXPECT_EQ(cache.info().entries, 0u);
  EXPECT_EQ(listing(cache.dir()), std::vector<std::string>{"README"});
  EXPECT_FALSE(cache.lookup(a).has_value());
}

TEST_F(CacheFixture, StoreIntoAnUnwritableDirectoryThrowsIO) {
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  ASSERT_EQ(::chmod(cache.dir().c_str(), 0500), 0);
  try {
    cache.store(sample_key(), sample_entry());
    ADD_FAILURE() << "store succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find(cache.dir()), std::string::npos) << e.what();
  }
  ::chmod(cache.dir().c_str(), 0700);
}

TEST(KernelCacheDir, CreatedPrivate) {
  TempDir tmp;
  KernelCache cache(tmp.sub("a/b/kernels"));
  struct stat st {};
  ASSERT_EQ(::stat(tmp.sub("a/b/kernels").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  ASSERT_EQ(::stat(tmp.sub("a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST(KernelCacheDir, NotADirectoryIsAnIOError) {
  TempDir tmp;
  write_bytes(tmp.sub("file"), "x");
  try {
    KernelCache cache(tmp.sub("file"));
    ADD_FAILURE() << "opened a file as a cache";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO);
  }
}

TEST(KernelCacheDir, GrapeCacheDirWins) {
  TempDir tmp;
  ScopedEnv grape("GRAPE_CACHE_DIR", tmp.sub("grape-cache"));
  ScopedEnv xdg("XDG_CACHE_HOME", tmp.sub("xdg"));
  EXPECT_EQ(default_cache_dir(), tmp.sub("grape-cache"));
  KernelCache cache = KernelCache::open_default();
  EXPECT_EQ(cache.dir(), tmp.sub("grape-cache") + "/kernels");
  cache.store(sample_key(), sample_entry());
  EXPECT_TRUE(std::filesystem::exists(tmp.sub("grape-cache/kernels/" + sample_key().hex() + ".grpk")));
}

TEST(KernelCacheDir, XdgCacheHomeThenHome) {
  TempDir tmp;
  ScopedEnv grape("GRAPE_CACHE_DIR", std::nullopt);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", tmp.sub("xdg"));
    EXPECT_EQ(default_cache_dir(), tmp.sub("xdg") + "/grape");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", "");  // empty counts as unset
  ScopedEnv home("HOME", tmp.sub("home"));
  EXPECT_EQ(default_cache_dir(), tmp.sub("home") + "/.cache/grape");
  ScopedEnv no_home("HOME", std::nullopt);
  EXPECT_THROW(default_cache_dir(), Error);
}

// ---- keys ----

TEST(CacheKey, ChangesWithEachComponent) {
  KeyInputs base = KeyInputs::for_compile("extern \"C\" __global__ void k() {}", "13.0", "sm_90", {"-lineinfo"});
  EXPECT_EQ(base.schema_version, kCacheSchemaVersion);
  EXPECT_EQ(base.grape_version, std::string(grape_version()));
  EXPECT_FALSE(base.grape_version.empty());
  const Hash128 k0 = cache_key(base);
  EXPECT_EQ(cache_key(base), k0);  // deterministic

  std::vector<std::pair<const char*, KeyInputs>> variants;
  auto vary = [&](const char* what, auto change) {
    KeyInputs k = base;
    change(k);
    variants.emplace_back(what, k);
  };
  vary("schema version", [](KeyInputs& k) { ++k.schema_version; });
  vary("grape version", [](KeyInputs& k) { k.grape_version += ".1"; });
  vary("source", [](KeyInputs& k) { k.source += " "; });
  vary("nvrtc version", [](KeyInputs& k) { k.nvrtc_version = "12.8"; });
  vary("arch", [](KeyInputs& k) { k.arch = "sm_80"; });
  vary("options", [](KeyInputs& k) { k.options.push_back("--use_fast_math"); });
  vary("option order", [](KeyInputs& k) { std::swap(k.options.front(), k.options.back()); });
  vary("field boundaries", [](KeyInputs& k) {
    k.arch = "sm_9";
    k.nvrtc_version = "13.00";
  });
  for (const auto& [what, k] : variants) EXPECT_NE(cache_key(k), k0) << what;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    for (std::size_t j = i + 1; j < variants.size(); ++j) {
      EXPECT_NE(cache_key(variants[i].second), cache_key(variants[j].second))
          << variants[i].first << " vs " << variants[j].first;
    }
  }
}

TEST(CacheKey, ForCompileIncludesDefaultsAndCallerOptions) {
  KeyInputs k = KeyInputs::for_compile("src", "13.0", "sm_80", {"-lineinfo"});
  std::vector<std::string> expected = default_compile_options("sm_80");
  expected.push_back("-lineinfo");
  EXPECT_EQ(k.options, expected);
  EXPECT_NE(cache_key(KeyInputs::for_compile("src", "13.0", "sm_80", {})), cache_key(k));
}

TEST(Hash, KnownValues) {
  // XXH64 of the empty input with seed 0, and XXH3-128 of "" (from xxHash's own test vectors).
  EXPECT_EQ(xxh64("", 0), 0xEF46DB3751D8E999ull);
  Hash128 h = xxh3_128("", 0);
  EXPECT_EQ(h.hex(), "99aa06d3014798d86001c324468d497f");
}

}  // namespace
}  // namespace grape::jit
