// Row-count variants (jit/kernel_source.h, kRowsDefine) of every matrix product of a GPT-2 decode
// step compiled with NVRTC (label nvrtc): each holds the GEMV entry point alone.
// tests/jit_codegen/row_variant_test.cpp has the sources' unit tests; tests/gpu runs them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

bool has(const std::vector<std::uint8_t>& bytes, const std::string& what) {
  return std::search(bytes.begin(), bytes.end(), what.begin(), what.end()) != bytes.end();
}

TEST(RowVariants, EveryDecodeProductCompilesWithOnlyItsGemvEntry) {
  auto c = compile_file("examples/gpt2.grp",
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  ASSERT_TRUE(c->mod);
  const ir::Function* f = c->mod->find("decode_step");
  ASSERT_NE(f, nullptr);
  std::set<std::string> sources;
  for (const jit::KernelSpec& s : plan_of(*f).specs)
    if (s.launch.kind == jit::LaunchRule::MatrixProduct && !s.launch.items.at(0).is_const())
      sources.insert(s.source);
  ASSERT_GE(sources.size(), 4u);  // q/k/v, the attention's projection, the MLP's two, lm_head
  for (const std::string& source : sources) {
    for (long long rows : {5LL, 13LL}) {
      const jit::CompileResult r =
          jit::compile_cuda(jit::rows_variant_source(source, rows), "rows_variant", "sm_90");
      ASSERT_FALSE(r.cubin.empty());
      EXPECT_TRUE(has(r.cubin, "grape_kernel"));
      EXPECT_FALSE(has(r.cubin, "grape_kernel_mma"));
    }
  }
}

}  // namespace
}  // namespace grape
