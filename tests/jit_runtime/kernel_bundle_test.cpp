// Ahead-of-time kernel bundles (jit/kernel_bundle.h): the file round-trips, compile_cached takes a
// bundled kernel without compiling it, and bad files are errors naming the file.
#include "jit/kernel_bundle.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.h"
#include "jit/hash.h"

namespace grape::jit {
namespace {

namespace fs = std::filesystem;

class BundleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("grape_bundle_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write(const std::string& p, const std::string& data) {
    std::ofstream(p, std::ios::binary) << data;
  }
  // The error `load(p)` throws: its code and message.
  static std::pair<ErrorCode, std::string> load_error(const std::string& p) {
    try {
      KernelBundle::load(p);
    } catch (const Error& e) {
      return {e.code(), e.what()};
    }
    return {ErrorCode::Internal, "(loaded)"};
  }
  fs::path dir_;
};

BundledKernel fake(const std::string& source, const std::string& arch, std::vector<std::uint8_t> cubin) {
  return {bundle_key(source, arch, {}), arch, std::move(cubin), "// ptx of " + source};
}

TEST_F(BundleTest, RoundTrip) {
  std::vector<BundledKernel> ks = {fake("a", "sm_90", {1, 2, 3}), fake("b", "sm_80", {4, 5}), fake("a", "sm_80", {})};
  write_bundle(path("k.grpkb"), ks, "13.0");
  EXPECT_FALSE(fs::exists(path("k.grpkb.partial.tmp")));
  auto b = KernelBundle::load(path("k.grpkb"));
  EXPECT_EQ(b->nvrtc_version(), "13.0");
  ASSERT_EQ(b->kernels().size(), 3u);
  const BundledKernel* k = b->find(bundle_key("b", "sm_80", {}));
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->cubin, (std::vector<std::uint8_t>{4, 5}));
  EXPECT_EQ(b->find(bundle_key("b", "sm_90", {})), nullptr);  // the arch is part of the key
  ASSERT_NE(b->find(bundle_key("a", "sm_80", {})), nullptr);
  EXPECT_EQ(b->find(bundle_key("a", "sm_80", {}))->ptx, "// ptx of a");
  EXPECT_NE(bundle_key("a", "sm_90", {}), bundle_key("a", "sm_90", {"-lineinfo"}));
}

TEST_F(BundleTest, CompileCachedTakesTheBundledKernelWithoutCompiling) {
  // NVRTC would reject this source: a result proves the bundle answered.
  const std::string source = "this is not CUDA, only a key (kernel_bundle_test)";
  write_bundle(path("use.grpkb"), {fake(source, "sm_90", {7, 7, 7})}, "13.0");
  use_bundle(KernelBundle::load(path("use.grpkb")));
  use_bundle(KernelBundle::load(path("use.grpkb")));  // the same file again: a no-op
  CompileResult r = compile_cached(source, "k", "sm_90", {}, nullptr);
  EXPECT_EQ(r.cubin, (std::vector<std::uint8_t>{7, 7, 7}));
  EXPECT_TRUE(r.from_cache);
  EXPECT_EQ(r.nvrtc_version, "13.0");
  EXPECT_FALSE(find_bundled(source, "sm_80", {}).has_value());
}

// A payload with a valid header and checksum around it, so the parser's own checks are reached.
std::string framed(const std::string& payload, std::uint64_t version = kBundleFormatVersion) {
  std::string c(ZSTD_compressBound(payload.size()), '\0');
  c.resize(ZSTD_compress(c.data(), c.size(), payload.data(), payload.size(), 1));
  std::string f("GRAPEKB\x01", 8);
  auto u64 = [&](std::uint64_t v) {
    for (int i = 0; i < 8; ++i) f += static_cast<char>(v >> (8 * i));
  };
  u64(version);
  u64(payload.size());
  u64(xxh64(payload.data(), payload.size()));
  u64(c.size());
  return f + c;
}
std::string str(const std::string& s) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>(static_cast<std::uint64_t>(s.size()) >> (8 * i));
  return out + s;
}
std::string u64s(std::uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>(v >> (8 * i));
  return out;
}

TEST_F(BundleTest, BadFilesAreErrorsNamingTheFile) {
  write_bundle(path("good.grpkb"), {fake("a", "sm_90", {1, 2, 3})}, "13.0");
  const std::string good = read(path("good.grpkb"));

  auto [code, msg] = load_error(path("missing.grpkb"));
  EXPECT_EQ(code, ErrorCode::IO);
  EXPECT_NE(msg.find("missing.grpkb: cannot be opened"), std::string::npos) << msg;

  std::tie(code, msg) = load_error(dir_.string());
  EXPECT_EQ(code, ErrorCode::IO);
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  std::tie(code, msg) = load_error(path("fifo"));  // refused, not blocked on
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;

  struct Case {
    const char* name;
    std::string data;
    const char* fragment;
  };
  std::string flipped = good;
  flipped[flipped.size() - 3] ^= 0x40;
  std::string bad_version = good;
  bad_version[8] = 9;
  const std::string version = grape_version();
  std::vector<Case> cases = {
      {"empty", "", "not a Grape kernel bundle"},
      {"text", "hello, this is not a bundle at all, really not one", "not a Grape kernel bundle"},
      {"truncated", good.substr(0, good.size() - 4), "truncated or padded"},
      {"padded", good + "xx", "truncated or padded"},
      {"flipped", flipped, "corrupt"},
      {"version", bad_version, "format version 9"},
      // 4 GiB claimed by a file of a few hundred bytes: refused before anything is allocated.
      {"huge size", good.substr(0, 16) + u64s(std::uint64_t{4} << 30) + good.substr(24),
       "corrupt (payload size 4294967296)"},
      {"other grape", framed(str("0.0.0-other") + str("13.0") + u64s(0)), "written by Grape 0.0.0-other"},
      {"huge count", framed(str(version) + str("13.0") + u64s(std::uint64_t{1} << 40)), "corrupt (kernel count"},
      {"lying length", framed(str(version) + str("13.0") + u64s(1) + u64s(1) + u64s(2) + u64s(1000) + "sm"),
       "runs past the end"},
      {"no code", framed(str(version) + str("13.0") + u64s(1) + u64s(1) + u64s(2) + str("sm_90") + str("") + str("")),
       "has no code"},
      {"trailing", framed(str(version) + str("13.0") + u64s(0) + "x"), "bytes after the last kernel"},
  };
  for (const Case& c : cases) {
    write(path(c.name), c.data);
    std::tie(code, msg) = load_error(path(c.name));
    EXPECT_EQ(code, ErrorCode::Format) << c.name << ": " << msg;
    EXPECT_NE(msg.find("kernel bundle " + path(c.name) + ": "), std::string::npos) << c.name << ": " << msg;
    EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
  }
}

TEST_F(BundleTest, UnwritablePathIsAnIOError) {
  try {
    write_bundle(path("no/such/dir/k.grpkb"), {fake("a", "sm_90", {1})}, "13.0");
    FAIL() << "written";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::IO);
    EXPECT_NE(std::string(e.what()).find("k.grpkb: cannot be written"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grape::jit
