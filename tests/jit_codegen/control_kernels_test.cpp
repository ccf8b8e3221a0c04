// The executors' control kernels (runtime/cuda/control_kernels.h) compile cleanly with NVRTC for
// every target CI checks, without toolkit headers for cudaGraphSetConditional. No GPU needed.
#include "runtime/cuda/control_kernels.h"

#include <gtest/gtest.h>

#include "jit/nvrtc.h"

namespace grape {
namespace {

TEST(ControlKernels, CompileWithNvrtc) {
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC here (" << why << ")";
  for (const char* arch : {"sm_80", "sm_90"}) {
    jit::CompileResult r = jit::compile_cuda(cuda::control_kernels_source(), "grape_control", arch);
    EXPECT_FALSE(r.cubin.empty()) << arch;
    EXPECT_TRUE(r.log.empty()) << arch << ": " << r.log;
    for (const char* name : {"grape_copy", "grape_loop_enter", "grape_loop_next", "grape_commit_gate"})
      EXPECT_NE(r.ptx.find(name), std::string::npos) << arch << " " << name;
  }
}

}  // namespace
}  // namespace grape
