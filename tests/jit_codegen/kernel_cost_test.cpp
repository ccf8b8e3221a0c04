// What `grape bench --profile` divides each kernel's time by (runtime/cuda/kernel_cost.h): the
// bytes a launch reads and writes as its ops see them, and the FLOPs of its matrix products.
// Expected figures are worked out by hand from the shapes below.
#include "runtime/cuda/kernel_cost.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "jit/codegen.h"
#include "scheduler/fusion.h"
#include "tests/jit_codegen/codegen_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

const char* kProgram = R"(
state cache: f16[8, 16] = zeros
fn main(x: f16[B, 32], w: f16[32, 48], b: f16[48], p: i32[]) -> f16[B, 48] {
  let y = x @ w + b
  cache[p, :] = y[0, 0:16] * 0.5
  return y * 2.0
}
)";

struct Costs {
  std::map<std::string, cuda::KernelCost> by_root;  // root op name -> cost (one kernel each here)
  size_t kernels = 0;
};

Costs costs_at(int64_t batch) {
  auto c = compile_text("cost.grp", kProgram);
  const ir::Function* f = c->mod->find("main");
  EXPECT_NE(f, nullptr);
  Costs out;
  if (!f) return out;
  std::vector<jit::KernelSpec> ks = jit::emit_kernels(*f, scheduler::plan_fusion(*f));
  out.kernels = ks.size();
  for (const jit::KernelSpec& k : ks)
    if (k.root) out.by_root[ir::op_name(k.root->op)] = cuda::kernel_cost(*f, k, {{"B", batch}});
  return out;
}

TEST(KernelCost, MatrixProductCountsItsOperandsResultAndFlops) {
  Costs c = costs_at(5);
  ASSERT_TRUE(c.by_root.count("add")) << "the product with its bias epilogue is rooted at the add";
  const cuda::KernelCost& k = c.by_root["add"];
  // x f16[5, 32] + w f16[32, 48] + b f16[48] read, y f16[5, 48] written.
  EXPECT_DOUBLE_EQ(k.bytes, 5 * 32 * 2 + 32 * 48 * 2 + 48 * 2 + 5 * 48 * 2);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 5 * 48 * 32);
}

TEST(KernelCost, FollowsTheBoundDims) {
  Costs c5 = costs_at(5), c64 = costs_at(64);
  EXPECT_DOUBLE_EQ(c64.by_root["add"].flops, 2.0 * 64 * 48 * 32);
  EXPECT_GT(c64.by_root["add"].bytes, c5.by_root["add"].bytes);
}

TEST(KernelCost, InPlaceSliceUpdateCountsTheSliceNotTheBuffer) {
  Costs c = costs_at(5);
  ASSERT_TRUE(c.by_root.count("slice_update"));
  const cuda::KernelCost& k = c.by_root["slice_update"];
  // Reads y[0, 0:16] (16 f16 through a slice of y) and p (one i32); writes one row of the cache
  // (16 f16), not its 8 x 16 elements; nothing is a matrix product. (Its value is arithmetic on
  // the product's output, so the update is a kernel of its own, not folded into the product.)
  EXPECT_DOUBLE_EQ(k.bytes, 16 * 2 + 4 + 16 * 2);
  EXPECT_DOUBLE_EQ(k.flops, 0);
}

// An update folded into the product's epilogue (scheduler/fusion.h): the product's kernel also
// reads p and writes the cache row, and there is no update kernel.
TEST(KernelCost, FoldedUpdateCountsItsRowInTheProduct) {
  auto c = compile_text("cost_folded.grp", R"(
state cache: f16[8, 16] = zeros
fn main(x: f16[5, 32], w: f16[32, 48], b: f16[48], p: i32[]) -> f16[5, 48] {
  let y = x @ w + b
  cache[p, :] = y[0, 0:16]
  return y * 2.0
}
)");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  std::vector<jit::KernelSpec> ks = jit::emit_kernels(*f, scheduler::plan_fusion(*f));
  ASSERT_EQ(ks.size(), 2u) << "the product (with the update) and y * 2";
  ASSERT_EQ(ks[0].root->op, ir::Op::Add);
  const cuda::KernelCost k = cuda::kernel_cost(*f, ks[0], {});
  // x, w, b and p read; y and the cache row (16 f16) written.
  EXPECT_DOUBLE_EQ(k.bytes, 5 * 32 * 2 + 32 * 48 * 2 + 48 * 2 + 4 + 5 * 48 * 2 + 16 * 2);
  EXPECT_DOUBLE_EQ(k.flops, 2.0 * 5 * 48 * 32);
}

// Sibling updates (one kernel writing two caches in place): each counts its own slice.
TEST(KernelCost, SiblingUpdatesCountEachSlice) {
  auto c = compile_text("cost2.grp", R"(
state kc: f16[8, 16] = zeros
state vc: f16[8, 32] = zeros
fn main(x: f16[48], p: i32[]) -> f16[48] {
  kc[p, :] = x[0:16]
  vc[p, :] = x[16:48]
  return x
}
)");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  std::vector<jit::KernelSpec> ks = jit::emit_kernels(*f, scheduler::plan_fusion(*f));
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_EQ(ks[0].aliases.size(), 2u);
  // Reads x (its 48 f16 through two slices) and p; writes 16 + 32 f16, not the caches' rows.
  EXPECT_DOUBLE_EQ(cuda::kernel_cost(*f, ks[0], {}).bytes, 48 * 2 + 4 + 48 * 2);
}

TEST(KernelCost, ElementwiseKernelHasNoFlops) {
  Costs c = costs_at(5);
  ASSERT_TRUE(c.by_root.count("mul"));
  EXPECT_DOUBLE_EQ(c.by_root["mul"].bytes, 5 * 48 * 2 * 2);
  EXPECT_DOUBLE_EQ(c.by_root["mul"].flops, 0);
}

}  // namespace
}  // namespace grape
