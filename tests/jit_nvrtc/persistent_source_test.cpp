// The persistent kernel of the mono executor (jit/persistent_source.h) of a whole GPT-2 decode step,
// compiled with NVRTC (label nvrtc: CI runs it in its optimized build). tests/jit_codegen has the
// source's unit tests, tests/gpu/mono_executor_test.cpp runs it.
#include "jit/persistent_source.h"

#include <gtest/gtest.h>

#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

// A whole decode step (GPT-2 at a small size): every kernel's base entry point (the matrix
// products' 5-row variants), a barrier before every step but the first, each distinct body once,
// compiled with NVRTC.
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
    // The matrix products' bodies of the 5-row variants, as the mono executor binds them at batch 5.
    if (s.kind == jit::PersistentStep::Kind::Launch &&
        pl.specs[s.index].launch.kind == jit::LaunchRule::MatrixProduct)
      s.rows = 5;
    steps.push_back(s);
  }
  ASSERT_GT(steps.size(), 10u);
  const std::string src = jit::persistent_kernel_source(steps, pl.specs, 256);
  EXPECT_NE(src.find("#define GRAPE_PERSISTENT 1"), std::string::npos);
  EXPECT_NE(src.find("GRAPE_ROWS_AS(5LL, "), std::string::npos);
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
