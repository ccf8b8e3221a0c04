// Row-count variants of matrix products (jit/kernel_source.h, kRowsDefine): how a product whose
// row count is a runtime dim names it, the variant's source, and a persistent kernel's bodies of a
// given row count (a constant row count stays a literal: kernel_sharing_test.cpp).
// tests/jit_nvrtc/row_variant_test.cpp compiles them; tests/gpu runs them.
#include <gtest/gtest.h>

#include "jit/kernel_source.h"
#include "jit/persistent_source.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

// The matrix-product kernels of `entry` in examples/mlp.grp, whose batch is a runtime dim or `B`.
std::vector<jit::KernelSpec> products(const std::string& text) {
  auto c = compile_text("mlp_rows.grp", text);
  EXPECT_TRUE(c->mod);
  std::vector<jit::KernelSpec> out;
  if (!c->mod) return out;
  const ir::Function* f = c->mod->find("main");
  EXPECT_NE(f, nullptr);
  for (const jit::KernelSpec& s : plan_of(*f).specs)
    if (s.launch.kind == jit::LaunchRule::MatrixProduct) out.push_back(s);
  return out;
}

constexpr const char* kMlp = R"(model m
weights {
  w1: f16[32, 64]
  w2: f16[64, 16]
}
fn main(x: f16[B, 32]) -> f16[B, 16] {
  return relu(x @ w1) @ w2
}
)";

TEST(RowVariants, ARuntimeRowCountIsReadThroughTheVariantMacro) {
  const std::vector<jit::KernelSpec> ks = products(kMlp);
  ASSERT_EQ(ks.size(), 2u);
  for (const jit::KernelSpec& s : ks) {
    EXPECT_FALSE(s.launch.items.at(0).is_const()) << s.name;
    EXPECT_NE(s.source.find("static long long R(const KParams* p) { return GRAPE_ROWS_OR(p->extra["),
              std::string::npos)
        << s.source;
    // Everything after the GEMV entry point is left out of a variant.
    const size_t gemv = s.source.find("grape_kernel(const __grid_constant__ KParams kp)");
    const size_t guard = s.source.find("#ifndef GRAPE_ROWS\n");
    const size_t mma = s.source.find("grape_kernel_mma(const __grid_constant__ KParams kp)");
    ASSERT_NE(gemv, std::string::npos);
    ASSERT_NE(guard, std::string::npos);
    ASSERT_NE(mma, std::string::npos);
    EXPECT_LT(gemv, guard);
    EXPECT_LT(guard, mma);
  }
}

TEST(RowVariants, TheVariantSourceDefinesTheRowCountAfterTheHeaders) {
  const std::vector<jit::KernelSpec> ks = products(kMlp);
  ASSERT_FALSE(ks.empty());
  const std::string v = jit::rows_variant_source(ks[0].source, 5);
  const size_t define = v.find("#define GRAPE_ROWS 5LL\n");
  ASSERT_NE(define, std::string::npos);
  // After the CUDA headers, which must open every source (NVRTC's precompiled header), and before
  // any template.
  EXPECT_EQ(v.compare(0, define, ks[0].source, 0, define), 0);
  EXPECT_EQ(v.find("#include", define), std::string::npos);
  EXPECT_LT(define, v.find("gemv.cuh"));
  EXPECT_NE(jit::rows_variant_source(ks[0].source, 9), v);
}

TEST(RowVariants, APersistentBodyOfAGivenRowCountNamesItsLiteral) {
  const std::vector<jit::KernelSpec> ks = products(kMlp);
  ASSERT_FALSE(ks.empty());
  const std::string general = jit::persistent_entry(ks[0].source, jit::kKernelSymbol);
  const std::string five = jit::persistent_entry(ks[0].source, jit::kKernelSymbol, 5);
  ASSERT_FALSE(general.empty());
  ASSERT_FALSE(five.empty());
  EXPECT_NE(general.find("GRAPE_ROWS_OR(p->extra["), std::string::npos);
  EXPECT_EQ(five.find("GRAPE_ROWS_OR("), std::string::npos);
  EXPECT_NE(five.find("GRAPE_ROWS_AS(5LL, p->extra["), std::string::npos);

  // Two steps of the same kernel, one at 5 rows and one general: two bodies.
  jit::PersistentStep a, b;
  a.index = b.index = 0;
  a.entry = b.entry = jit::kKernelSymbol;
  a.rows = 5;
  b.barrier_before = true;
  const std::string src = jit::persistent_kernel_source({a, b}, {ks[0]}, 256);
  EXPECT_NE(src.find("namespace grape_p1 {"), std::string::npos);
  EXPECT_NE(src.find("GRAPE_ROWS_AS(5LL, "), std::string::npos);
}

}  // namespace
}  // namespace grape
