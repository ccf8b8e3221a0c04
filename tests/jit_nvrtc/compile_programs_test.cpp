// NVRTC compiles every kernel of every differential-test program (and, with GRAPE_SLOW_TESTS=1,
// GPT-2 at its real size). No GPU needed. Its own binary with the ctest label nvrtc: CI runs it in
// the optimized build, where NVRTC takes a fifth of the time it takes under AddressSanitizer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "jit/build_progress.h"
#include "jit/codegen.h"
#include "jit/kernel_bundle.h"
#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"
#include "tests/jit_codegen/codegen_test_util.h"

namespace grape {
namespace {

namespace fs = std::filesystem;

using namespace codegen_test;

// Every kernel of every program (compute_80; GRAPE_NVRTC_ARCHS for more).
void compile_all(const std::string& what, const ir::Module& m) {
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  // PTX for compute_80 by default (the strictest target; ptxas is most of the time, and the GPU
  // tests build cubins for the device), as compile.examples does: GRAPE_NVRTC_ARCHS=sm_80,sm_90
  // builds cubins for both.
  std::vector<std::string> archs;
  std::stringstream list(std::getenv("GRAPE_NVRTC_ARCHS") ? std::getenv("GRAPE_NVRTC_ARCHS") : "compute_80");
  for (std::string a; std::getline(list, a, ',');)
    if (!a.empty()) archs.push_back(a);
  jit::CompileReport r = jit::compile_module(m, archs);
  size_t total = 0;
  for (const auto& e : r.entries) total += e.kernels;
  std::cout << what << ": " << total << " kernels, " << r.compiled << " compiles OK";
  for (const auto& e : r.entries) std::cout << " [" << e.name << " " << e.kernels << "]";
  std::cout << "\n";
  for (const auto& e : r.errors) ADD_FAILURE() << what << ": " << e.substr(0, 6000);
}

// mlp, bert and gpt2 at tiny sizes are compiled for sm_80 and sm_90 by the compile.examples ctest
// (tests/compile/compile_examples.sh), through the CLI; compiling them here too doubled CI's time.
// Slow (every entry at real size, sm_80 and sm_90); real sizes change only constants in the
// kernels that compile.examples compiles at tiny size, so CI runs it only with GRAPE_SLOW_TESTS=1.
TEST(CodegenNvrtc, Gpt2Real) {
  if (!std::getenv("GRAPE_SLOW_TESTS")) GTEST_SKIP() << "slow (about 3 min): set GRAPE_SLOW_TESTS=1 to run";
  auto c = compile_file("examples/gpt2.grp");
  compile_all("gpt2", *c->mod);
}
// A bundle holds the matrix products' wide variants (and the row-count variants asked for) as well,
// under the key the executor looks up when it builds them at first use: sm_90a (warpgroup MMA) for
// an sm_90 bundle.
TEST(CodegenNvrtc, BundlesHoldTheWideAndRowVariantsForTheirTargets) {
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  auto c = compile_text("proj.grp", R"(
weights { w: f16[256, 256] }
fn main(x: f16[B, 256]) -> f16[B, 256] {
  return gelu(linear(x, w)) + x
}
)");
  ASSERT_TRUE(c->mod);
  std::vector<jit::BundledKernel> bundle;
  // The base kernels and the wide variants are one build (one pool, no barrier between them):
  // every progress report has the same total.
  std::vector<std::pair<size_t, size_t>> reports;
  jit::set_build_observer([&](size_t done, size_t total) { reports.emplace_back(done, total); });
  jit::CompileReport r = jit::compile_module(*c->mod, {"sm_90"}, nullptr, &bundle, {}, {5});
  jit::set_build_observer(nullptr);
  for (const auto& e : r.errors) ADD_FAILURE() << e.substr(0, 6000);
  ASSERT_FALSE(reports.empty());
  for (const auto& [done, total] : reports) EXPECT_EQ(total, bundle.size());
  EXPECT_EQ(reports.back(), std::make_pair(bundle.size(), bundle.size()));
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  auto ks = jit::emit_kernels(*f, scheduler::plan_fusion(*f));
  std::vector<std::string> products;
  for (const auto& k : ks)
    if (k.launch.kind == jit::LaunchRule::MatrixProduct) products.push_back(k.source);
  ASSERT_FALSE(products.empty());
  EXPECT_EQ(r.wide_compiled, products.size());
  EXPECT_EQ(r.rows_compiled, products.size());  // the 5-row variants asked for (B is a runtime dim)
  const std::string target = scheduler::gemm_wide_target("sm_90");
  EXPECT_EQ(target, std::getenv("GRAPE_GEMM_WGMMA") && std::string(std::getenv("GRAPE_GEMM_WGMMA")) == "0"
                        ? "sm_90"
                        : "sm_90a");
  auto has = [&](const std::string& source, const std::string& arch) {
    const jit::Hash128 key = jit::bundle_key(source, arch, {});
    for (const auto& b : bundle)
      if (b.key == key && b.arch == arch && !b.cubin.empty()) return true;
    return false;
  };
  for (const auto& src : products) {
    EXPECT_TRUE(has(src, "sm_90"));
    EXPECT_TRUE(has(jit::wide_variant_source(src), target));
    EXPECT_FALSE(has(jit::wide_variant_source(src), "sm_90") && target != "sm_90");
    // The row-count variant for the kernel's own target, as DeviceProgram builds it.
    EXPECT_TRUE(has(jit::rows_variant_source(src, 5), "sm_90"));
    EXPECT_FALSE(has(jit::rows_variant_source(src, 4), "sm_90"));
  }
  // Without a bundle, `grape compile` checks the base sources only (the wide variants cost NVRTC
  // time nobody asked for).
  EXPECT_EQ(jit::compile_module(*c->mod, {"compute_80"}).wide_compiled, 0u);
  EXPECT_EQ(jit::compile_module(*c->mod, {"compute_80"}, nullptr, nullptr, {}, {5}).rows_compiled, 0u);
}

TEST(CodegenNvrtc, DifftestCases) {
  for (const auto& e : fs::directory_iterator(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    auto c = compile_text(e.path().string(), read(e.path()));
    if (c->mod) compile_all(e.path().filename().string(), *c->mod);
  }
}

}  // namespace
}  // namespace grape
