// NVRTC compiles every kernel of every differential-test program (and, with GRAPE_SLOW_TESTS=1,
// GPT-2 at its real size). No GPU needed. Its own binary with the ctest label nvrtc: CI runs it in
// the optimized build, where NVRTC takes a fifth of the time it takes under AddressSanitizer.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "jit/codegen.h"
#include "jit/nvrtc.h"
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
TEST(CodegenNvrtc, DifftestCases) {
  for (const auto& e : fs::directory_iterator(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    auto c = compile_text(e.path().string(), read(e.path()));
    if (c->mod) compile_all(e.path().filename().string(), *c->mod);
  }
}

}  // namespace
}  // namespace grape
