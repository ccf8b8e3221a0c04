// The persistent kernel of the mono executor (jit/persistent_source.h) on the CPU: how an entry
// point becomes a device function. tests/jit_nvrtc/persistent_source_test.cpp compiles a whole
// one with NVRTC; it runs in tests/gpu/mono_executor_test.cpp.
#include "jit/persistent_source.h"

#include <gtest/gtest.h>

#include "jit/kernel_source.h"

namespace grape {
namespace {

const std::string kGlue = R"(struct Ops {
  __device__ static float a(const KParams* p) { return __ldg((const float*)p->buf[0]); }
};

extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
#pragma unroll 4
  for (long long item = blockIdx.x; item < 4; item += gridDim.x) { if (item == 0) p->extra[0]; }
}

extern "C" __global__ void __launch_bounds__(256) grape_kernel_mma(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  { { } }
}
)";

std::string source_of(const std::string& glue) { return jit::assemble_kernel_source({}, glue); }

TEST(PersistentSource, TheBoundEntryBecomesADeviceFunctionAndTheOthersAreLeftOut) {
  const std::string base = jit::persistent_entry(source_of(kGlue), "grape_kernel");
  ASSERT_FALSE(base.empty());
  EXPECT_NE(base.find("__device__ __noinline__ void grape_entry(const KParams& kp) {"), std::string::npos);
  EXPECT_NE(base.find("item < 4"), std::string::npos);
  // A pragma of the body stays where it was.
  EXPECT_NE(base.find("#pragma unroll 4\n  for (long long item"), std::string::npos);
  EXPECT_EQ(base.find("__global__"), std::string::npos);
  EXPECT_EQ(base.find("{ { } }"), std::string::npos);  // the other entry's body
  // Loads that an earlier step of the same launch may have written go through the plain path.
  EXPECT_EQ(base.find("__ldg("), std::string::npos);
  EXPECT_NE(base.find("grape_ld_plain((const float*)p->buf[0])"), std::string::npos);

  const std::string mma = jit::persistent_entry(source_of(kGlue), "grape_kernel_mma");
  ASSERT_FALSE(mma.empty());
  EXPECT_NE(mma.find("{ { } }"), std::string::npos);
  EXPECT_EQ(mma.find("item < 4"), std::string::npos);
}

TEST(PersistentSource, GlueItCannotConvertIsRefused) {
  EXPECT_EQ(jit::persistent_entry(source_of(kGlue), "grape_kernel_wide"), "");           // no such entry
  EXPECT_EQ(jit::persistent_entry("extern \"C\" __global__ void", "grape_kernel"), "");  // no glue marker
  EXPECT_EQ(jit::persistent_entry(source_of("#define X 1\n" + kGlue), "grape_kernel"), "");
  // A conditional inside the body.
  std::string conditional = kGlue;
  conditional.replace(conditional.find("#pragma unroll 4"), 16, "#if 1\n#endif");
  EXPECT_EQ(jit::persistent_entry(source_of(conditional), "grape_kernel"), "");
  // A source with no entry point at all.
  EXPECT_EQ(jit::persistent_entry(source_of("struct Ops {};\n"), "grape_kernel"), "");
  // An unterminated body.
  std::string cut = kGlue.substr(0, kGlue.find("for (long long"));
  EXPECT_EQ(jit::persistent_entry(source_of(cut), "grape_kernel"), "");

  std::vector<jit::KernelSpec> specs(1);
  specs[0].name = "k_0";
  specs[0].source = source_of(kGlue);
  jit::PersistentStep s;
  s.entry = "grape_kernel_wide";
  try {
    jit::persistent_kernel_source({s}, specs, 256);
    FAIL() << "an entry that is not in the source was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("k_0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace grape
