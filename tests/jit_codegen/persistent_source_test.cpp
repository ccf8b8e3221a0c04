// The persistent kernel of the mono executor (jit/persistent_source.h) on the CPU: how an entry
// point becomes a device function, and that the kernel of a whole GPT-2 decode step compiles with
// NVRTC. It runs in tests/gpu/mono_executor_test.cpp.
#include "jit/persistent_source.h"

#include <gtest/gtest.h>

#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

const std::string kGlue = R"(struct Ops {
  __device__ static float a(const KParams* p) { return __ldg((const float*)p->buf[0]); }
};

extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
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

// A whole decode step (GPT-2 at a small size): every kernel's base entry point, a barrier before
// every step but the first, each distinct body once, compiled with NVRTC.
TEST(PersistentSource, AWholeDecodeStepCompiles) {
  auto c = compile_file("examples/gpt2.grp",
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  ASSERT_TRUE(c->mod);
  const ir::Function* f = c->mod->find("decode_step");
  ASSERT_NE(f, nullptr);
  const Planned pl = plan_of(*f);
  std::vector<jit::PersistentStep> steps;
  size_t copies = 0;
  for (const scheduler::Step& st : pl.plan.steps) {
    ASSERT_NE(st.kind, scheduler::Step::Kind::Loop);
    jit::PersistentStep s;
    s.kind = st.kind == scheduler::Step::Kind::Copy ? jit::PersistentStep::Kind::Copy
                                                    : jit::PersistentStep::Kind::Launch;
    s.index = s.kind == jit::PersistentStep::Kind::Copy ? copies++ : st.index;
    s.entry = jit::kKernelSymbol;
    s.barrier_before = !steps.empty();
    steps.push_back(s);
  }
  ASSERT_GT(steps.size(), 10u);
  const std::string src = jit::persistent_kernel_source(steps, pl.specs, 256);
  EXPECT_NE(src.find("#define GRAPE_PERSISTENT 1"), std::string::npos);
  size_t calls = 0, barriers = 0;
  for (size_t at = src.find("::grape_entry(grape_kp["); at != std::string::npos;
       at = src.find("::grape_entry(grape_kp[", at + 1))
    ++calls;
  for (size_t at = src.find("  grape_grid_barrier(pp.barrier, pp.trace, "); at != std::string::npos;
       at = src.find("  grape_grid_barrier(pp.barrier, pp.trace, ", at + 1))
    ++barriers;
  EXPECT_EQ(calls, pl.specs.size());
  EXPECT_EQ(barriers, steps.size() - 1);  // one before every step but the first
  // and one at the end, only to stamp the trace's last time
  EXPECT_NE(src.find("  if (pp.trace) grape_grid_barrier(pp.barrier, pp.trace, " +
                     std::to_string(steps.size()) + ");"),
            std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(256, 2)"), std::string::npos);
  // The two layers share their kernels' code: fewer distinct bodies than kernels.
  size_t bodies = 0;
  for (size_t at = src.find("void grape_entry(const KParams& kp)"); at != std::string::npos;
       at = src.find("void grape_entry(const KParams& kp)", at + 1))
    ++bodies;
  EXPECT_LT(bodies, calls);
  for (const char* arch : {"sm_90"}) {  // one target: the GPU tests run it on sm_90
    const jit::CompileResult r = jit::compile_cuda(src, "decode_step_persistent", arch);
    EXPECT_FALSE(r.cubin.empty()) << arch;
  }
}

}  // namespace
}  // namespace grape
