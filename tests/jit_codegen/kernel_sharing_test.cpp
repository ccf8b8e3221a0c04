// Kernels that compute the same thing get the same source text, so the build compiles them once
// (jit/parallel_compile.cpp and the kernel cache deduplicate by text): the predicate check is in
// every kernel, a runtime row count and a constant leading index (a layer of a stacked buffer) are
// extra[] slots, and unravels nothing reads are dropped.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "jit/codegen.h"
#include "jit/emit_context.h"
#include "scheduler/fusion.h"
#include "tests/jit_codegen/codegen_test_util.h"

namespace grape {
namespace {

using namespace codegen_test;

std::vector<jit::KernelSpec> kernels_of(const ir::Module& m, const std::string& entry) {
  const ir::Function* f = m.find(entry);
  EXPECT_NE(f, nullptr) << entry;
  if (!f) return {};
  return jit::emit_kernels(*f, scheduler::plan_fusion(*f));
}

// Empty when the sources are equal, else the first line where they differ (not both sources:
// each holds the whole prelude).
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ga = static_cast<bool>(std::getline(sa, la)), gb = static_cast<bool>(std::getline(sb, lb));
    if (!ga && !gb) return "";
    if (ga != gb || la != lb) return "line " + std::to_string(line) + ": '" + la + "' vs '" + lb + "'";
  }
}

std::vector<jit::KernelSpec> kernels_rooted_at(const std::vector<jit::KernelSpec>& ks,
                                               const std::string& op) {
  std::vector<jit::KernelSpec> out;
  for (const auto& k : ks)
    if (k.name.size() > op.size() && k.name.compare(k.name.size() - op.size(), op.size(), op) == 0)
      out.push_back(k);
  return out;
}

TEST(KernelSharing, SameKernelInsideAndOutsideAnIf) {
  auto c = compile_text("pred.grp", R"(
fn main(x: f32[8], c: bool[]) -> (f32[8], f32[8]) {
  var y = x
  if c {
    y = softmax(x * 3.0, axis=-1)
  }
  return y, softmax(x * 3.0, axis=-1)
}
)");
  auto soft = kernels_rooted_at(kernels_of(*c->mod, "main"), "softmax");
  ASSERT_EQ(soft.size(), 2u);
  EXPECT_NE(soft[0].pred == ir::kNoValue, soft[1].pred == ir::kNoValue) << "one predicated, one not";
  EXPECT_EQ(first_difference(soft[0].source, soft[1].source), "");
}

TEST(KernelSharing, RuntimeRowCountOfAMatrixProductIsOneSlot) {
  auto c = compile_text("rows.grp", R"(
weights { w: f16[64, 128] }
fn rows2(x: f16[B, 64]) -> f16[B, 128] { return x @ w }
fn rows3(x: f16[B, T, 64]) -> f16[B, T, 128] { return x @ w }
)");
  auto a = kernels_of(*c->mod, "rows2"), b = kernels_of(*c->mod, "rows3");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(first_difference(a[0].source, b[0].source), "") << "B and B * T rows: the same machine code";
  EXPECT_NE(a[0].source.find("static long long R(const KParams* p) { return GRAPE_ROWS_OR(p->extra[0]); }"),
            std::string::npos);
  std::map<std::string, int64_t> dims{{"B", 3}, {"T", 5}};
  ASSERT_EQ(a[0].extra.size(), 1u);
  ASSERT_EQ(b[0].extra.size(), 1u);
  EXPECT_EQ(a[0].extra[0].eval(dims), 3);
  EXPECT_EQ(b[0].extra[0].eval(dims), 15);
}

TEST(KernelSharing, ConstantRowCountStaysALiteral) {
  auto c = compile_text("rows.grp", R"(
weights { w: f16[64, 128] }
fn main(x: f16[5, 64]) -> f16[5, 128] { return x @ w }
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_NE(ks[0].source.find("static long long R(const KParams* p) { return 5LL; }"), std::string::npos);
}

TEST(KernelSharing, LayersOfAStackedStateShareOneKernel) {
  auto c = compile_text("layers.grp", R"(
state s: f32[3, N] = zeros
# `l` is an int argument, so the loop is unrolled (docs/language.md): three softmax kernels.
fn layer(y: f32[N], l: int) -> f32[N] { return softmax(y + s[l], axis=-1) }
fn main(x: f32[N]) -> f32[N] {
  var y = x
  for l in 0..3 {
    y = layer(y, l)
  }
  return y
}
)");
  auto soft = kernels_rooted_at(kernels_of(*c->mod, "main"), "softmax");
  ASSERT_EQ(soft.size(), 3u);
  std::map<std::string, int64_t> dims{{"N", 16}};
  // Layer 0 has no offset and keeps the plain index; layers 1 and 2 are one source, and read s at
  // offset l * N from an extra[] slot.
  EXPECT_NE(first_difference(soft[0].source, soft[1].source), "");
  EXPECT_EQ(first_difference(soft[1].source, soft[2].source), "");
  for (size_t l = 1; l < soft.size(); ++l) {
    std::set<int64_t> values;
    for (const auto& e : soft[l].extra) values.insert(e.eval(dims));
    EXPECT_TRUE(values.count(static_cast<int64_t>(l) * 16)) << "layer " << l;
  }
}

TEST(KernelSharing, UnusedUnravelsAreDroppedAndUsedOnesKept) {
  using jit::detail::Ctx;
  std::vector<Ctx::Unravel> u(3);
  u[0] = {{"t0", "i1"},
          {"  [[maybe_unused]] long long t0 = r;\n",
           "  [[maybe_unused]] const long long i1 = t0 % 4LL; t0 /= 4LL;\n"}};
  u[1] = {{"t2"}, {"  [[maybe_unused]] long long t2 = i1;\n"}};  // reads u[0]'s i1: dead only once u[1] goes
  u[2] = {{"t12"}, {"  [[maybe_unused]] long long t12 = j;\n"}};
  std::string glue = u[0].lines[0] + u[0].lines[1] + u[1].lines[0] + u[2].lines[0] + "  x = t12 + t1;\n";
  // t12 is read (and t1 is not t12, nor a variable of u[0]): only u[2] stays.
  EXPECT_EQ(jit::detail::prune_unused_unravels(glue, u), u[2].lines[0] + "  x = t12 + t1;\n");
  // A read of i1 keeps u[0] (and u[1], which nothing reads, still goes).
  std::string used = u[0].lines[0] + u[0].lines[1] + u[1].lines[0] + "  x = i1;\n";
  EXPECT_EQ(jit::detail::prune_unused_unravels(used, u), u[0].lines[0] + u[0].lines[1] + "  x = i1;\n");
}

}  // namespace
}  // namespace grape
