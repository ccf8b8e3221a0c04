// Row-count variants (jit/kernel_source.h, kRowsDefine; docs/kernels.md, "Row-count variants"):
// matrix products whose row count is a runtime dim run code compiled for the bound count when it
// is at most scheduler::kGemvMaxRows. Every count of the GEMV path (one and two passes of 8 rows,
// both weight layouts, K not a multiple of 8) against the CPU under each executor, one session
// with changing rows; the variants in use where they apply and nowhere else. Without a CUDA driver
// every test skips with a message.
#include <gtest/gtest.h>

#include "runtime/model.h"
#include "scheduler/launch.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

// Two products: [K, N] weights (x @ w) with a bias, relu and a row prologue; [N, K] (linear).
constexpr const char* kProgram = R"(model rows
weights {
  w1: f16[100, 72]
  b1: f16[72]
  g: f16[100]
  w2: f16[24, 72]
}
fn main(x: f16[B, 100]) -> f16[B, 24] {
  let h = relu(rms_norm(x, g) @ w1 + b1)
  return linear(h, w2)
}
)";

TEST(RowVariants, EveryGemvRowCountMatchesTheCpu) {
  REQUIRE_GPU();
  auto m = Model::load_source(kProgram, "rows.grp");
  m->set_random_weights(5);
  const std::vector<int64_t> all = {1, 2, 5, 8, 9, 13, 16, 17, 5, 3};
  for (const char* executor : {"eager", "graph", "mono"}) {
    // 17 rows take GEMM tiles, which on Hopper may be warpgroup-MMA tiles (the heuristic's or the
    // autotuner's choice), and the mono executor refuses those: mono runs the GEMV counts only.
    std::vector<int64_t> rows;
    for (int64_t r : all)
      if (r <= scheduler::kGemvMaxRows || std::string(executor) != "mono") rows.push_back(r);
    std::vector<Inputs> calls;
    for (size_t c = 0; c < rows.size(); ++c)
      calls.push_back({{"x", sample(DType::F16, {rows[c], 100}, static_cast<uint32_t>(c))}});
    size_t call = 0;
    compare_with_cpu(m, "main", calls, executor, "rows", [&](const RunStats& st, const std::string& at) {
      // Both products, at every count of the GEMV path; none at 17 rows (GEMM tiles).
      EXPECT_EQ(st.row_variants, rows[call] <= 16 ? 2u : 0u) << at;
      ++call;
    });
  }
}

}  // namespace
}  // namespace grape
