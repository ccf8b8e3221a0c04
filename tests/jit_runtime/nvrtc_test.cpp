#include "jit/nvrtc.h"

#include <gtest/gtest.h>

#include <cstring>

#include "base/error.h"
#include "jit/kernel_cache.h"
#include "jit_test_util.h"

namespace grape::jit {
namespace {

using testing::read_bytes;
using testing::TempDir;
using testing::write_bytes;

const char* const kVectorAdd = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i] + __half2float(__float2half(0.0f)) + __bfloat162float(__float2bfloat16(0.0f));
}
)";

// ELF magic: a cubin is an ELF file.
bool is_elf(const std::vector<std::uint8_t>& bytes) {
  return bytes.size() > 4 && std::memcmp(bytes.data(),
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

TEST(Nvrtc, LoadsAndReportsItself) {
  SKIP_WITHOUT_NVRTC();
  EXPECT_FALSE(nvrtc_version().empty());
  EXPECT_FALSE(nvrtc_library_path().empty());
  std::vector<int> archs = nvrtc_supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
  std::cout << "[ info     ] NVRTC " << nvrtc_version() << " from " << nvrtc_library_path()
            << ", CUDA headers from " << (cuda_include_dir().empty() ? "(none)" : cuda_include_dir())
            << (nvrtc_uses_pch() ? ", precompiled headers on" : ", precompiled headers off") << "\n";
}

TEST(Nvrtc, PrecompiledHeaderOnUnlessTheEnvironmentSaysZero) {
  EXPECT_TRUE(pch_wanted(nullptr));
  EXPECT_TRUE(pch_wanted("1"));
  EXPECT_TRUE(pch_wanted(""));
  EXPECT_FALSE(pch_wanted("0"));
}

class NvrtcArch : public ::testing::TestWithParam<const char*> {};

TEST_P(NvrtcArch, CompilesCubinAndPtx) {
  SKIP_WITHOUT_NVRTC();
  const std::string arch = GetParam();
  CompileResult r = compile_cuda(kVectorAdd, "vector_add", arch);
  EXPECT_TRUE(is_elf(r.cubin)) << "cubin of " << r.cubin.size() << " bytes";
  EXPECT_NE(r.ptx.find(".entry vector_add"), std::string::npos);
  EXPECT_NE(r.ptx.find(".target " + arch), std::string::npos);
  EXPECT_EQ(r.log, "");
  EXPECT_FALSE(r.has_warnings());
  EXPECT_EQ(r.nvrtc_version, nvrtc_version());
  EXPECT_FALSE(r.from_cache);
}

INSTANTIATE_TEST_SUITE_P(Ci, NvrtcArch, ::testing::Values("sm_80", "sm_90"));

TEST(Nvrtc, VirtualArchGivesPtxOnly) {
  SKIP_WITHOUT_NVRTC();
  CompileResult r = compile_cuda(kVectorAdd, "vector_add", "compute_90");
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.ptx.find(".entry vector_add"), std::string::npos);
}

TEST(Nvrtc, CompileErrorCarriesLogAndNumberedSource) {
  SKIP_WITHOUT_NVRTC();
  const std::string source =
      "extern \"C\" __global__ void k_12(float* x) {\n"
      "  x[threadIdx.x] = 1.0f;\n"
      "  x[0] = undefined_thing;\n"
      "}\n";
  try {
    compile_cuda(source, "k_12", "sm_90");
    FAIL() << "a broken kernel compiled";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::Internal);
    EXPECT_NE(m.find("kernel k_12"), std::string::npos) << m;
    EXPECT_NE(m.find("sm_90"), std::string::npos) << m;
    // NVRTC's log line naming the file and line, and the message.
    EXPECT_NE(m.find("k_12.cu(3): error"), std::string::npos) << m;
    EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;
    // The generated source with line numbers.
    EXPECT_NE(m.find("3 |   x[0] = undefined_thing;"), std::string::npos) << m;
    EXPECT_NE(m.find("1 | extern \"C\" __global__ void k_12(float* x) {"), std::string::npos) << m;
  }
}

TEST(Nvrtc, WarningsAreReturned) {
  SKIP_WITHOUT_NVRTC();
  CompileResult r =
      compile_cuda("extern \"C\" __global__ void w(float* x) { int unused; x[0] = 1.0f; }\n", "w", "sm_90");
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_TRUE(r.has_warnings());
  EXPECT_NE(r.log.find("unused"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("w.cu(1)"), std::string::npos) << r.log;
}

TEST(Nvrtc, UnsupportedArchAndOptions) {
  SKIP_WITHOUT_NVRTC();
  for (const char* arch : {"sm_20", "gfx90a", "sm_", ""}) {
    try {
      compile_cuda("extern \"C\" __global__ void k() {}\n", "k", arch);
      ADD_FAILURE() << "compiled for " << arch;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
      EXPECT_NE(std::string(e.what()).find("kernel k"), std::string::npos) << e.what();
    }
  }
  try {
    compile_cuda("extern \"C\" __global__ void k() {}\n", "k", "sm_90", {"--no-such-option"});
    ADD_FAILURE() << "an unknown option was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("--no-such-option"), std::string::npos) << e.what();
  }
}

TEST(NumberLines, AlignsAndKeepsEveryLine) {
  EXPECT_EQ(number_lines("a\nb\n"), "1 | a\n2 | b\n");
  EXPECT_EQ(number_lines("a\nb"), "1 | a\n2 | b\n");
  EXPECT_EQ(number_lines(""), "1 | \n");
  std::string ten;
  for (int i = 0; i < 10; ++i) ten += "x\n";
  std::string numbered = number_lines(ten);
  EXPECT_EQ(numbered.substr(0, 6), " 1 | x");
  EXPECT_NE(numbered.find("\n10 | x\n"), std::string::npos);
}

// ---- NVRTC through the cache ----

TEST(CompileCached, MissCompilesHitLoadsCorruptRebuilds) {
  SKIP_WITHOUT_NVRTC();
  TempDir tmp;
  KernelCache cache(tmp.sub("kernels"));
  std::vector<std::string> reports;
  cache.set_reporter([&](const std::string& path, const std::string&) { reports.push_back(path); });

  CompileResult first = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(cache.info().entries, 1u);

  CompileResult second = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.ptx, first.ptx);
  EXPECT_EQ(second.nvrtc_version, first.nvrtc_version);

  // Another arch or option is another entry.
  EXPECT_FALSE(compile_cached(kVectorAdd, "vector_add", "sm_80", {}, &cache).from_cache);
  EXPECT_FALSE(compile_cached(kVectorAdd, "vector_add", "sm_90", {"-lineinfo"}, &cache).from_cache);
  EXPECT_EQ(cache.info().entries, 3u);

  // Corrupt the sm_90 entry: reported once, recompiled, stored again.
  Hash128 key = cache_key(KeyInputs::for_compile(kVectorAdd, nvrtc_version(), "sm_90", {}));
  std::string bytes = read_bytes(cache.entry_path(key));
  ASSERT_FALSE(bytes.empty());
  bytes[bytes.size() / 2] ^= 0x10;
  write_bytes(cache.entry_path(key), bytes);
  CompileResult rebuilt = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache);
  EXPECT_FALSE(rebuilt.from_cache);
  EXPECT_EQ(rebuilt.cubin, first.cubin);
  EXPECT_EQ(reports, std::vector<std::string>{cache.entry_path(key)});
  EXPECT_TRUE(compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache).from_cache);
  EXPECT_EQ(reports.size(), 1u);
}

TEST(CompileCached, WarningsSurviveTheCache) {
  SKIP_WITHOUT_NVRTC();
  TempDir tmp;
  KernelCache cache(tmp.sub("kernels"));
  const std::string source = "extern \"C\" __global__ void w(float* x) { int unused; x[0] = 1.0f; }\n";
  CompileResult fresh = compile_cached(source, "w", "sm_90", {}, &cache);
  CompileResult cached = compile_cached(source, "w", "sm_90", {}, &cache);
  ASSERT_TRUE(cached.from_cache);
  EXPECT_TRUE(cached.has_warnings());
  EXPECT_EQ(cached.log, fresh.log);
}

TEST(CompileCached, NoCacheJustCompiles) {
  SKIP_WITHOUT_NVRTC();
  CompileResult r = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, nullptr);
  EXPECT_FALSE(r.from_cache);
  EXPECT_FALSE(r.cubin.empty());
}

TEST(CompileCached, UnwritableCacheStillCompilesAndReportsOnce) {
  SKIP_WITHOUT_NVRTC();
  if (::geteuid() == 0) GTEST_SKIP() << "root ignores directory permissions";
  TempDir tmp;
  KernelCache cache(tmp.sub("kernels"));
  std::vector<std::string> problems;
  cache.set_reporter([&](const std::string&, const std::string& problem) { problems.push_back(problem); });
  ASSERT_EQ(::chmod(cache.dir().c_str(), 0500), 0);
  CompileResult a = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache);
  CompileResult b = compile_cached(kVectorAdd, "vector_add", "sm_90", {}, &cache);
  ::chmod(cache.dir().c_str(), 0700);
  EXPECT_FALSE(a.cubin.empty());
  EXPECT_FALSE(b.from_cache);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("stays uncached"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace grape::jit
