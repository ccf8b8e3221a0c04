// CUDA code generation: golden sources of a few kernels and fusion counts (no GPU needed; the NVRTC
// compiles of every program are in tests/jit_nvrtc/).
#include "jit/codegen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "base/error.h"
#include "frontend/compile.h"
#include "jit/kernel_source.h"
#include "jit/nvrtc.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"
#include "tests/jit_codegen/codegen_test_util.h"

namespace grape {
namespace {

namespace fs = std::filesystem;

using namespace codegen_test;

std::vector<jit::KernelSpec> kernels_of(const ir::Module& m, const std::string& entry) {
  const ir::Function* f = m.find(entry);
  EXPECT_NE(f, nullptr) << entry;
  return jit::emit_kernels(*f, scheduler::plan_fusion(*f));
}

// The kernel text after the shared prelude.
std::string body(const jit::KernelSpec& k) { return k.source.substr(k.source.find("#line 1 \"generated\"")); }

void check_golden(const std::string& name, const std::string& text) {
  fs::path p = fs::path(GRAPE_SOURCE_DIR) / "tests/jit_codegen/golden" / (name + ".cu");
  if (std::getenv("GRAPE_UPDATE_GOLDEN")) {
    std::ofstream(p) << text;
    return;
  }
  ASSERT_TRUE(fs::exists(p)) << p << " is missing; run with GRAPE_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(read(p), text) << "golden " << p
                           << " differs; run with GRAPE_UPDATE_GOLDEN=1 and review the diff";
}

TEST(CodegenGolden, ElementwiseChainIsOneKernel) {
  auto c = compile_text("chain.grp", R"(
fn main(x: f16[B, 64], b: f16[64]) -> f16[B, 64] {
  return gelu(x * 2.0 + b, approximate="tanh")
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::Elementwise);
  EXPECT_EQ(ks[0].num_inputs, 2u);
  check_golden("elementwise_chain", body(ks[0]));
}

TEST(CodegenGolden, SoftmaxRowKernelWithPrologue) {
  auto c = compile_text("softmax.grp", R"(
fn main(x: f32[B, S, 128]) -> f32[B, S, 128] {
  return softmax(x * 0.125, axis=-1)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::Rows);
  check_golden("softmax_rows", body(ks[0]));
}

// Rows of a constant length up to 1024 take jit/kernels/row_norm.cuh (a warp per row, four rows
// per block); longer ones the block-per-row kernel. Both print the norms' epsilon as a valid
// literal: eps=1 used to become "1f", which NVRTC rejects.
TEST(CodegenFusion, NormRowsByWarpUpTo1024ColumnsAndIntegerEpsilons) {
  auto c = compile_text("norms.grp", R"(
weights { g: f32[768]
          b: f32[768]
          g2: f32[2000] }
fn short_rows(x: f32[B, 768]) -> f32[B, 768] {
  return layer_norm(x, g, b, eps=1)
}
fn long_rows(x: f32[B, 2000]) -> f32[B, 2000] {
  return rms_norm(x, g2, eps=2)
}
)");
  auto short_rows = kernels_of(*c->mod, "short_rows");
  auto long_rows = kernels_of(*c->mod, "long_rows");
  ASSERT_EQ(short_rows.size(), 1u);
  ASSERT_EQ(long_rows.size(), 1u);
  EXPECT_NE(short_rows[0].source.find("grape_row_norm<Ops, 24>(p);"), std::string::npos);
  EXPECT_NE(short_rows[0].source.find("static constexpr float kEps = 1.0f;"), std::string::npos);
  EXPECT_EQ(long_rows[0].source.find("grape_row_norm<"), std::string::npos);
  EXPECT_NE(long_rows[0].source.find("grape_row_norm_rows<Ops>(p);"), std::string::npos);
  EXPECT_NE(long_rows[0].source.find("static constexpr float kEps = 2.0f;"), std::string::npos);
  // 300 rows, 4 per block of 128 threads; the block-per-row kernel one block per row.
  EXPECT_EQ(scheduler::launch_dims(short_rows[0].launch, {{"B", 300}}, 132).grid, 75u);
  EXPECT_EQ(scheduler::launch_dims(short_rows[0].launch, {{"B", 300}}, 132).block, 128u);
  EXPECT_EQ(scheduler::launch_dims(long_rows[0].launch, {{"B", 300}}, 132).grid, 300u);
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  for (const auto* k : {&short_rows[0], &long_rows[0]}) {
    jit::CompileResult r = jit::compile_cuda(k->source, k->name, "sm_90");
    EXPECT_FALSE(r.cubin.empty()) << r.log;
    EXPECT_FALSE(r.has_warnings()) << r.log;
  }
}

// topk with k <= 16 takes jit/kernels/topk.cuh; a long float row is spread over blocks that meet
// in the scratch area (one counter per row, then k keys per block), a short one keeps one block,
// integer rows always do; k > 16 keeps the k-pass kernel. Every variant compiles for sm_90.
TEST(CodegenFusion, TopKSplitsLongFloatRowsOverBlocks) {
  auto c = compile_text("topk.grp", R"(
fn main(x: f32[R, C], n: i32[R, C]) -> (i32[R, 10], i32[R, 7], i32[R, 17]) {
  let v, i = topk(x * 2.0, 10)
  let vn, jn = topk(n, 7)
  let v17, i17 = topk(x, 17)
  return (i, jn, i17)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 3u);
  const jit::KernelSpec* flt = nullptr;
  const jit::KernelSpec* integer = nullptr;
  const jit::KernelSpec* kpass = nullptr;
  for (const auto& k : ks) {
    if (k.source.find("grape_topk_one_pass_keys<Ops, 10, 8>(p, item)") != std::string::npos) flt = &k;
    if (k.source.find("grape_topk_one_pass_list<Ops, 7, 8>(p, row)") != std::string::npos) integer = &k;
    if (k.source.find("grape_topk_passes<Ops>(p, row)") != std::string::npos) kpass = &k;
  }
  ASSERT_TRUE(flt && integer && kpass);
  EXPECT_NE(flt->source.find("grape_topk_gather_parts"), std::string::npos);
  // A beam search's 5 x 50257 candidates as one row: 122 blocks of >= 2048 elements.
  auto d = scheduler::launch_dims(flt->launch, {{"R", 1}, {"C", 251285}}, 132);
  EXPECT_EQ(d.splits, 122);
  EXPECT_EQ(d.grid, 122u);
  EXPECT_EQ(d.block, 512u);
  EXPECT_EQ(d.scratch_bytes, scheduler::topk_scratch_bytes(1, 122, 10));
  EXPECT_EQ(d.scratch_bytes, 8u + 122u * 10u * 8u);
  // A longer row: at most kTopKMaxSplits blocks.
  d = scheduler::launch_dims(flt->launch, {{"R", 1}, {"C", 1000000}}, 132);
  EXPECT_EQ(d.splits, scheduler::kTopKMaxSplits);
  // 100 rows of 50257: the rows alone fill the GPU, two blocks each at most.
  d = scheduler::launch_dims(flt->launch, {{"R", 100}, {"C", 50257}}, 132);
  EXPECT_EQ(d.splits, 2);
  EXPECT_EQ(d.grid, 200u);
  // Short rows: one block per row and no scratch.
  d = scheduler::launch_dims(flt->launch, {{"R", 3}, {"C", 4000}}, 132);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 3u);
  EXPECT_EQ(d.scratch_bytes, 0u);
  d = scheduler::launch_dims(integer->launch, {{"R", 1}, {"C", 251285}}, 132);
  EXPECT_EQ(d.grid, 1u);
  EXPECT_EQ(d.scratch_bytes, 0u);
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  for (const auto* k : {flt, integer, kpass}) {
    jit::CompileResult r = jit::compile_cuda(k->source, k->name, "sm_90");
    EXPECT_FALSE(r.cubin.empty()) << r.log;
    EXPECT_FALSE(r.has_warnings()) << r.log;
  }
}

TEST(CodegenGolden, PredicatedKernelReturnsEarly) {
  // e has two uses and 128 elements (more than fusion's kRecomputeMaxElements): a kernel of its own,
  // predicated on c.
  auto c = compile_text("pred.grp", R"(
fn main(x: f32[128], c: bool[]) -> (f32[128], f32[128]) {
  var y = x
  var z = x
  if c {
    let e = exp(x) + 1.0
    y = e
    z = e * 2.0
  }
  return (y, z)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  bool found = false;
  for (const auto& k : ks) {
    if (k.pred == ir::kNoValue) continue;
    found = true;
    EXPECT_NE(k.source.find("if (p->pred && !*p->pred) return;"), std::string::npos);
    check_golden("predicated", body(k));
  }
  EXPECT_TRUE(found);
}

// A small value used by two kernels is recomputed in each (scheduler/fusion.h,
// kRecomputeMaxElements); a larger one is written by its own kernel. A branch's value under %c is
// computed by the select on %c that reads it, not by a predicated kernel of its own.
TEST(CodegenFusion, SmallValuesRecomputedAndBranchValuesComputedByTheirSelect) {
  auto count = [](const char* src) {
    auto c = compile_text("small.grp", src);
    return kernels_of(*c->mod, "main").size();
  };
  EXPECT_EQ(count(R"(
fn main(v: f32[10], j: i32[]) -> (f32[], f32[]) {
  let b = v[j] * 2.0
  return (b + 1.0, b - 1.0)
}
)"),
            2u);
  EXPECT_EQ(count(R"(
fn main(v: f32[100], w: f32[100]) -> (f32[100], f32[100]) {
  let b = v * w
  return (b + 1.0, b - 1.0)
}
)"),
            3u);
  EXPECT_EQ(count(R"(
fn main(x: f32[8], c: bool[]) -> f32[8] {
  var y = x
  if c {
    y = exp(x) + 1.0
  }
  return y
}
)"),
            1u);
}

TEST(CodegenFusion, LinearBiasGeluEpilogueAndLayerNormPrologue) {
  auto c = compile_text("mlp.grp", R"(
weights { w1: f16[256, 64]
          b1: f16[256]
          g: f16[64]
          bb: f16[64] }
fn main(x: f16[B, 64]) -> f16[B, 256] {
  return gelu(linear(layer_norm(x, g, bb), w1, b1))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::MatrixProduct);
  EXPECT_FALSE(ks[0].launch.weight_kn);  // linear: W is [N][K]
  EXPECT_NE(ks[0].source.find("row_stats"), std::string::npos);
  EXPECT_NE(ks[0].source.find("grape_gelu"), std::string::npos);
  EXPECT_NE(ks[0].source.find("grape_gemv_nk<Ops>"), std::string::npos);
  EXPECT_NE(ks[0].source.find("grape_gemm_mma<Ops"), std::string::npos);
  check_golden("linear_layernorm_gelu_glue", body(ks[0]));
  // GEMV path (B = 5 rows): 2 column tiles of 128, K = 64 in one split.
  auto d = scheduler::launch_dims(ks[0].launch, {{"B", 5}}, 132);
  EXPECT_EQ(d.block, 256u);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 2u);
  EXPECT_EQ(d.scratch_bytes, 0u);
  // Tensor-core path (B = 300 rows): 64 x 64 tiles; K = 64 is too short to split.
  d = scheduler::launch_dims(ks[0].launch, {{"B", 300}}, 132);
  EXPECT_TRUE(d.tensor_cores);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 5u * 4u);
}

// Programmatic dependent launch (scheduler::gemv_dependent_launch, default 3): the GEMV entry of a
// product with a program weight leaves the wait and the predicate check to its body (after the
// first weight loads) and releases its successor after the weight; a product whose right operand
// is not a weight (an input here; in general a kernel may write it) waits first. The tensor-core
// entry points always wait first.
TEST(CodegenFusion, GemvRequestsAProgramWeightBeforeItWaitsAndAnInputAfter) {
  ASSERT_EQ(scheduler::gemv_dependent_launch(), 3) << "the default; GRAPE_GEMV_PDL is set";
  auto c = compile_text("pdl.grp", R"(
weights { w: f16[64, 96] }
fn main(x: f16[B, 64], y: f16[64, 96]) -> (f16[B, 96], f16[B, 96]) {
  return (x @ w, x @ y)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 2u);
  int weight = -1, input = -1;
  for (int i = 0; i < 2; ++i) {
    if (ks[i].launch.kind != jit::LaunchRule::MatrixProduct) continue;
    (ks[i].launch.weight_buffer >= 0 ? weight : input) = i;
  }
  ASSERT_GE(weight, 0);
  ASSERT_GE(input, 0);
  auto gemv_entry = [&](const std::string& src) {
    const size_t at = src.find("grape_kernel(const __grid_constant__ KParams kp) {");
    EXPECT_NE(at, std::string::npos);
    return src.substr(at, src.find('}', at) - at);
  };
  const std::string& w = ks[weight].source;
  EXPECT_NE(w.find("static constexpr bool kWeightBeforeWait = true;"), std::string::npos);
  EXPECT_NE(w.find("static constexpr bool kTriggerAfterWeight = true;"), std::string::npos);
  EXPECT_EQ(gemv_entry(w).find("GRAPE_GRID_WAIT"), std::string::npos);
  EXPECT_EQ(gemv_entry(w).find("p->pred"), std::string::npos);
  // The tensor-core entry (more than 16 rows) waits at its start.
  const size_t mma = w.find("grape_kernel_mma(const __grid_constant__ KParams kp) {\n  GRAPE_GRID_WAIT();");
  EXPECT_NE(mma, std::string::npos);
  const std::string& y = ks[input].source;
  EXPECT_NE(y.find("static constexpr bool kWeightBeforeWait = false;"), std::string::npos);
  EXPECT_NE(y.find("static constexpr bool kTriggerAfterWeight = true;"), std::string::npos);
  EXPECT_NE(gemv_entry(y).find(
                "GRAPE_GRID_WAIT();\n  const KParams* const p = &kp;\n  if (p->pred && !*p->pred) return;"),
            std::string::npos);
}

TEST(CodegenFusion, GemvSplitsKToCoverTheGpu) {
  jit::LaunchRule r;
  r.kind = jit::LaunchRule::MatrixProduct;
  r.weight_kn = true;
  r.gemv_cols = 8;  // what the code generator picks for this shape (GemvNarrowsTilesBeforeSplittingK)
  r.items = {ir::Dim(5), ir::Dim(768), ir::Dim(3072)};  // GPT-2 mlp.c_proj at decode
  auto d = scheduler::launch_dims(r, {}, 132);
  // 96 column tiles of 8; K in two ranges of 1536 (the shared-memory limit), no further split.
  EXPECT_EQ(d.splits, 2);
  EXPECT_EQ(d.kchunk, 1536);
  EXPECT_EQ(d.grid, 96u * 2u);
  EXPECT_EQ(d.scratch_bytes, 512u + 2u * 5 * 768 * 4);
  EXPECT_LE(d.shared_bytes, scheduler::kMatrixProductMaxSharedBytes);
  // Wide tiles on a narrow product: K is split until about two blocks per SM.
  r.gemv_cols = 64;
  d = scheduler::launch_dims(r, {}, 132);
  EXPECT_EQ(d.kchunk % 64, 0);
  EXPECT_EQ(d.splits, (3072 + d.kchunk - 1) / d.kchunk);
  EXPECT_GE(d.grid, 132u);
  EXPECT_EQ(d.grid, 12u * static_cast<unsigned>(d.splits));
  EXPECT_EQ(d.scratch_bytes, 256u + static_cast<size_t>(d.splits) * 5 * 768 * 4);
  // Many columns need no split.
  r.weight_kn = false;
  r.items = {ir::Dim(5), ir::Dim(50257), ir::Dim(768)};  // lm_head
  d = scheduler::launch_dims(r, {}, 132);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 393u);
  // Tensor-core tiles that would leave SMs idle split K too, into ranges of at least
  // kGemmMinSplitK: BERT b=1, 128 x 768 x 768.
  r.items = {ir::Dim(128), ir::Dim(768), ir::Dim(768)};
  d = scheduler::launch_dims(r, {}, 132);
  EXPECT_TRUE(d.tensor_cores);
  EXPECT_EQ(scheduler::kGemmMinSplitK, 256);
  EXPECT_EQ(d.splits, 3);
  EXPECT_EQ(d.kchunk, 256);
  EXPECT_EQ(d.grid, 24u * 3u);
  // Enough tiles: no split, and 128 x 128 tiles fill the GPU (BERT b=16, 2048 x 3072).
  r.items = {ir::Dim(2048), ir::Dim(3072), ir::Dim(768)};
  d = scheduler::launch_dims(r, {}, 132);
  EXPECT_EQ(d.splits, 1);
  EXPECT_TRUE(d.wide);
  EXPECT_EQ(d.grid, 16u * 24u);
  // The same when the executor could not build the wide variant: 64 x 64 tiles.
  r.allow_wide = false;
  d = scheduler::launch_dims(r, {}, 132);
  EXPECT_FALSE(d.wide);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 32u * 48u);
}

// Products that fill the GPU with 128 x 128 tiles take the wide entry point, which is only in the
// source compiled with jit::kWideDefine (built at first use); A seen through views (merge_heads)
// is staged by 16-byte copies (kAView) instead of element by element.
TEST(CodegenFusion, LargeProductsTakeWideTilesAndViewOperandsGoBy16Bytes) {
  auto c = compile_text("proj.grp", R"(
weights { w: f16[768, 768]
          b: f16[768] }
fn main(x: f16[B, 12, S, 64]) -> f16[B, S, 768] {
  return linear(reshape(transpose(x, 1, 2), (B, S, 768)), w, b)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  const std::string src = ks[0].source;
  EXPECT_NE(src.find("static constexpr bool kAView = true"), std::string::npos);
  // merge_heads keeps the head width innermost with unit stride: 8 consecutive k are consecutive.
  EXPECT_NE(src.find("static constexpr bool kAViewRows = true"), std::string::npos);
  EXPECT_NE(src.find(std::string("#ifdef ") + jit::kWideDefine), std::string::npos);
  EXPECT_NE(src.find("grape_gemm_mma<Ops, 128, 128, 2, 3>"), std::string::npos);
  // Two blocks per multiprocessor: one block's epilogue overlaps the other's tensor-core work.
  EXPECT_NE(src.find("__launch_bounds__(256, 2) grape_kernel_wide"), std::string::npos);
  // BERT b=16 (2048 rows): 16 x 6 tiles of 128, 0.73 blocks per multiprocessor: wide.
  auto d = scheduler::launch_dims(ks[0].launch, {{"B", 16}, {"S", 128}}, 132);
  EXPECT_TRUE(d.tensor_cores);
  EXPECT_TRUE(d.wide);
  EXPECT_EQ(d.grid, 96u);
  EXPECT_EQ(d.shared_bytes, scheduler::gemm_wide_shared_bytes());
  // b=1 (128 rows): 6 wide tiles would idle the GPU; 64 x 64 tiles with K splits.
  d = scheduler::launch_dims(ks[0].launch, {{"B", 1}, {"S", 128}}, 132);
  EXPECT_TRUE(d.tensor_cores);
  EXPECT_FALSE(d.wide);
  EXPECT_GT(d.splits, 1);
  // On Hopper (wgmma_device) the same wide tiles run gemm_wgmma.cuh: its larger shared memory.
  EXPECT_NE(src.find("grape_gemm_wgmma<Ops, 128>"), std::string::npos);
  // The 128 x 64 entry always gets scheduler::kGemmWgmma64Stages (one main loop, not one per
  // depth), the 64 x 64 entry kGemmWgmmaM64Stages.
  EXPECT_NE(src.find("grape_gemm_wgmma<Ops, 64, " + std::to_string(scheduler::kGemmWgmma64Stages) + ">"),
            std::string::npos);
  EXPECT_NE(src.find("grape_gemm_wgmma<Ops, 96>"), std::string::npos);
  EXPECT_NE(src.find("grape_gemm_wgmma<Ops, 64, " + std::to_string(scheduler::kGemmWgmmaM64Stages) + ", 64>"),
            std::string::npos);
  EXPECT_TRUE(ks[0].launch.wgmma);
  d = scheduler::launch_dims(ks[0].launch, {{"B", 16}, {"S", 128}}, 132, true);
  EXPECT_TRUE(d.wide);
  // 96 tiles of 128 x 128 would leave 36 SMs idle: 128 tiles of 128 x 96, one wave, one block per
  // multiprocessor, 4 stages of (128 + 96) x 128 bytes (+ 1 KB to align).
  EXPECT_TRUE(d.n96);
  EXPECT_EQ(d.grid, 128u);
  EXPECT_EQ(d.shared_bytes, scheduler::gemm_wgmma96_shared_bytes(4));
  EXPECT_EQ(d.shared_bytes, 4u * 224u * 128u + 1024u);
  // b=1 on Hopper: 128 x 64 wgmma tiles (12), no K splits, 4 stages of (128 + 64) x 128 bytes.
  d = scheduler::launch_dims(ks[0].launch, {{"B", 1}, {"S", 128}}, 132, true);
  EXPECT_TRUE(d.wide);
  EXPECT_TRUE(d.narrow);
  EXPECT_EQ(d.grid, 12u);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.shared_bytes, 4u * 192u * 128u + 1024u);
  EXPECT_NE(src.find(std::string("grape_kernel") + jit::kWgmma64Suffix), std::string::npos);
  // b=32: 192 tiles, more than one wave, but K = 768: still one block.
  d = scheduler::launch_dims(ks[0].launch, {{"B", 32}, {"S", 128}}, 132, true);
  EXPECT_TRUE(d.wide);
  EXPECT_EQ(d.shared_bytes, 4u * 32768u + 1024u);
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  const std::string wide = "#define " + std::string(jit::kWideDefine) + " 1\n" + src;
  for (const std::string& s : std::vector<std::string>{src, wide}) {
    jit::CompileResult r = jit::compile_cuda(s, "proj", "sm_90");
    EXPECT_FALSE(r.cubin.empty());
    EXPECT_FALSE(r.has_warnings()) << r.log;
    EXPECT_EQ(r.ptx.find("wgmma"), std::string::npos);
  }
  // sm_90a: the warpgroup MMA path is compiled in (ptxas checks its operands), beside the
  // mma.sync fallback for K % 8 != 0, within 128 registers (two blocks per multiprocessor).
  jit::CompileResult r = jit::compile_cuda(wide, "proj", "sm_90a");
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(r.has_warnings()) << r.log;
  EXPECT_NE(r.ptx.find("wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), std::string::npos);
  EXPECT_NE(r.ptx.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
  EXPECT_NE(r.ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
}

// More tiles than multiprocessors and a long K: two blocks per multiprocessor of 3 stages each.
TEST(CodegenFusion, WgmmaTakesTwoBlocksPerSmForManyTilesOfLongK) {
  auto c = compile_text("fc1.grp", R"(
weights { w: f16[16384, 4096] }
fn main(x: f16[B, 4096]) -> f16[B, 16384] {
  return gelu(linear(x, w))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_TRUE(ks[0].launch.wgmma);
  auto d = scheduler::launch_dims(ks[0].launch, {{"B", 256}}, 132, true);  // 256 tiles
  EXPECT_TRUE(d.wide);
  EXPECT_EQ(d.shared_bytes, 3u * 32768u + 1024u);
  EXPECT_LE(2 * (d.shared_bytes + 1024), 228u * 1024u);  // two fit (1 KB reserved per block)
  EXPECT_GE(d.shared_bytes, scheduler::gemm_wide_shared_bytes());
  EXPECT_LE(d.shared_bytes, scheduler::gemm_wgmma_max_shared_bytes());
  d = scheduler::launch_dims(ks[0].launch, {{"B", 128}}, 132, true);  // 128 tiles: one wave
  EXPECT_EQ(d.shared_bytes, 4u * 32768u + 1024u);
  d = scheduler::launch_dims(ks[0].launch, {{"B", 256}}, 132, false);  // not Hopper: mma.sync tiles
  EXPECT_EQ(d.shared_bytes, scheduler::gemm_wide_shared_bytes());
}

// A product whose W is [K][N] (matmul) or whose A is computed keeps the mma.sync wide tiles.
TEST(CodegenFusion, WgmmaOnlyForKMajorOperandsStagedBy16Bytes) {
  auto c = compile_text("kn.grp", R"(
weights { w: f16[768, 768]
          g: f16[768]
          b: f16[768] }
fn main(x: f16[B, 768]) -> (f16[B, 768], f16[B, 768]) {
  return (matmul(x, w), linear(layer_norm(x, g, b), w))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_GE(ks.size(), 2u);
  int products = 0;
  for (const auto& k : ks) {
    if (k.launch.kind != jit::LaunchRule::MatrixProduct) continue;
    ++products;
    EXPECT_FALSE(k.launch.wgmma) << k.source;
    EXPECT_EQ(k.source.find("grape_gemm_wgmma<Ops,"), std::string::npos);
    auto d = scheduler::launch_dims(k.launch, {{"B", 4096}}, 132, true);
    EXPECT_TRUE(d.wide);
    EXPECT_FALSE(d.narrow);
    EXPECT_FALSE(scheduler::launch_dims(k.launch, {{"B", 128}}, 132, true).narrow);
    EXPECT_EQ(d.shared_bytes, scheduler::gemm_wide_shared_bytes());
  }
  EXPECT_EQ(products, 2);
}

TEST(CodegenFusion, EnvKnobsRejectValuesOutsideTheirRange) {
  const char* name = "GRAPE_TEST_ENV_KNOB";
  unsetenv(name);
  EXPECT_EQ(scheduler::env_knob(name, 2, 6, 3), 3);
  setenv(name, "", 1);
  EXPECT_EQ(scheduler::env_knob(name, 2, 6, 3), 3);
  setenv(name, "5", 1);
  EXPECT_EQ(scheduler::env_knob(name, 2, 6, 3), 5);
  for (const char* bad : {"7", "1", "-2", "4x", "x", "99999999999999999999"}) {
    setenv(name, bad, 1);
    try {
      scheduler::env_knob(name, 2, 6, 3);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const grape::Error& e) {
      EXPECT_EQ(e.code(), grape::ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("GRAPE_TEST_ENV_KNOB must be an integer from 2 to 6, got '" +
                                           std::string(bad) + "'"),
                std::string::npos)
          << e.what();
    }
  }
  unsetenv(name);
}

// 16-bit [K][N] products whose N is a multiple of 8 run gemv_mma.cuh's 64-column tiles (the
// weight as the mma's A operand); otherwise gemv_kn's column tiles narrow (8 threads x 8 columns
// down to 1 x 8) until the tiles alone give about one block per multiprocessor, so small decode
// products need no K splits.
TEST(CodegenFusion, GemvKnTakesTensorCoreTilesWhereRowsAlignElseNarrowsFmaTiles) {
  auto launch_of = [](int64_t n, int64_t k) {
    auto c = compile_text("gemv.grp", "weights { w: f16[" + std::to_string(k) + ", " + std::to_string(n) +
                                          "] }\nfn main(x: f16[B, " + std::to_string(k) + "]) -> f16[B, " +
                                          std::to_string(n) + "] {\n  return x @ w\n}\n");
    auto ks = kernels_of(*c->mod, "main");
    EXPECT_EQ(ks.size(), 1u);
    EXPECT_TRUE(ks[0].launch.weight_kn);
    return std::make_pair(ks[0].launch, ks[0].source);
  };
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2304, 768}, {768, 3072}, {16384, 4096}}) {
    auto [launch, source] = launch_of(n, k);
    EXPECT_TRUE(launch.gemv_mma) << n << " x " << k;
    EXPECT_EQ(launch.gemv_cols, 64);
    EXPECT_NE(source.find("grape_gemv_kn_mma<Ops>(p, item, grape_smem)"), std::string::npos);
  }
  auto tx_of = [&](int64_t n, int64_t k) {
    auto [launch, source] = launch_of(n, k);
    EXPECT_FALSE(launch.gemv_mma);
    const int cols = launch.gemv_cols;
    EXPECT_NE(source.find("grape_gemv_kn<Ops, " + std::to_string(cols / 8) + ">"), std::string::npos);
    return cols / 8;
  };
  EXPECT_EQ(tx_of(2300, 768), 2);    // 144 tiles of 16 columns
  EXPECT_EQ(tx_of(770, 768), 1);     // 97 tiles of 8
  EXPECT_EQ(tx_of(770, 3072), 1);    // 97 tiles x 2 K ranges
  EXPECT_EQ(tx_of(16380, 4096), 8);  // wide: 256 tiles of 64 x 3 K ranges
}

// Products of a few rows but very many columns (a vocabulary projection) take the tensor-core
// path (scheduler::kGemvTensorCoreMinColumns); the layers' products stay on the GEMV template.
TEST(CodegenFusion, VeryWideFewRowProductsRunOnTensorCores) {
  auto launch_of = [](int64_t n, int64_t k) {
    auto c = compile_text("wide.grp", "weights { w: f16[" + std::to_string(n) + ", " + std::to_string(k) +
                                          "] }\nfn main(x: f16[B, " + std::to_string(k) + "]) -> f16[B, " +
                                          std::to_string(n) + "] {\n  return linear(x, w)\n}\n");
    auto ks = kernels_of(*c->mod, "main");
    EXPECT_EQ(ks.size(), 1u);
    const bool tc = ks[0].launch.gemv_tensor_cores;
    EXPECT_EQ(ks[0].source.find("grape_gemm_mma<Ops, 16, 128") != std::string::npos, tc);
    EXPECT_EQ(ks[0].source.find("grape_gemv_nk<Ops>") != std::string::npos, !tc);
    return ks[0].launch;
  };
  EXPECT_FALSE(launch_of(3072, 768).gemv_tensor_cores);    // GPT-2 mlp.c_fc
  EXPECT_FALSE(launch_of(16384, 4096).gemv_tensor_cores);  // the mlp benchmark's hidden layer
  jit::LaunchRule lm = launch_of(50257, 768);              // GPT-2 lm_head
  EXPECT_TRUE(lm.gemv_tensor_cores);
  auto d = scheduler::launch_dims(lm, {{"B", 5}}, 132);
  EXPECT_FALSE(d.tensor_cores);  // the first entry point (at most 16 rows), which is the mma one here
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.grid, 393u);  // 16 x 128 tiles
}

TEST(CodegenFusion, SliceUpdateIsInPlace) {
  auto c = compile_text("su.grp", R"(
state kc: f16[4, 16, 8] = zeros
fn main(k: f16[4, 8], pos: i32[]) -> f16[4, 8] {
  kc[:, pos, :] = k * 2.0
  return kc[:, 0, :]
}
)");
  auto ks = kernels_of(*c->mod, "main");
  bool found = false;
  for (const auto& k : ks)
    if (k.root->op == ir::Op::SliceUpdate) {
      found = true;
      ASSERT_EQ(k.aliases.size(), 1u);
      EXPECT_EQ(k.buffers[k.aliases[0].first], k.root->results[0]);
      EXPECT_EQ(k.buffers[k.aliases[0].second], k.root->operands[0]);
    }
  EXPECT_TRUE(found);
}

// A take along a leading axis (a beam search's cache reorder) copies 16 bytes per thread; a take
// of a row too short for 16 bytes, and a permute that moves the innermost axis, copy by element.
TEST(CodegenFusion, DataMovementCopies16BytesWhereTheInnerAxisIsContiguous) {
  auto c = compile_text("copy.grp", R"(
fn main(x: f16[2, 5, 3, 64], i: i32[5], y: f32[4, 6], j: i32[4]) -> (f16[2, 5, 3, 64], f32[4, 6], f16[2, 5, 64, 3]) {
  return (take(x, i, axis=1), take(y, j, axis=0), permute(x, (0, 1, 3, 2)))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 3u);
  for (const auto& k : ks) {
    const bool vector = body(k).find("reinterpret_cast<uint4*>") != std::string::npos;
    const bool leading_take = k.root->op == ir::Op::Take && k.root->attrs.axis == 1;
    EXPECT_EQ(vector, leading_take) << body(k);
    if (leading_take) {
      // 8 halves per thread: the launch covers 2 * 5 * 3 * 8 items, not the 1920 elements.
      int64_t items = 1;
      for (const auto& d : k.launch.items) items *= d.const_value();
      EXPECT_EQ(items, 2 * 5 * 3 * 8);
      EXPECT_NE(k.sequence_body, "") << "a copy runs inside block sequences too";
    }
  }
}

// q @ k^T, scale, mask, softmax and p @ v: one attention kernel (jit/kernels/attention.cuh), whose
// source compiles with NVRTC; the launch spreads a decode step's keys over the block's warps.
TEST(CodegenFusion, AttentionIsOneKernel) {
  auto c = compile_text("attn.grp", R"(
fn main(q: f16[B, 4, 1, 64], k: f16[B, 4, T, 64], v: f16[B, 4, T, 64], p: i32[]) -> f16[B, 4, 1, 64] {
  let mask = reshape(arange(T, i32) <= p, (1, T))
  let att = (q @ transpose(k, 2, 3)) * 0.125
  return (softmax(where(mask, att, -10000.0), axis=-1) @ v) * 2.0
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::Attention);
  // Two output dims per lane; v rows (64 halves) by 16-byte loads, 8 lanes per row; key rows of 8
  // vectors prefetched.
  EXPECT_NE(ks[0].source.find("grape_attention<Ops, 2, 8, 8>"), std::string::npos);
  // Decode (one query row): 8 warps share the keys of one row; 256 keys' scores fit in shared memory.
  auto d = scheduler::launch_dims(ks[0].launch, {{"B", 5}, {"T", 256}}, 132);
  EXPECT_EQ(d.splits, 1);
  EXPECT_EQ(d.kchunk, 1);
  EXPECT_EQ(d.grid, 20u);
  EXPECT_EQ(d.shared_bytes, 4u * (64 + 8 * 32 * 33 + 16 + 256));
  // 8 query rows per block; 4096 keys' scores are recomputed, not cached.
  jit::LaunchRule rule = ks[0].launch;
  rule.items[1] = ir::Dim(100);
  d = scheduler::launch_dims(rule, {{"B", 2}, {"T", 4096}}, 132);
  EXPECT_EQ(d.splits, 8);
  EXPECT_EQ(d.kchunk, 0);
  EXPECT_EQ(d.grid, 2u * 4u * 13u);
  EXPECT_LE(d.shared_bytes, scheduler::kAttentionMaxSharedBytes);
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  jit::CompileResult r = jit::compile_cuda(ks[0].source, "attention", "sm_90");
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(r.has_warnings()) << r.log;
  // GPT-2's decode_step (one query row per sequence): one attention kernel per layer.
  auto g = compile_file("examples/gpt2.grp",
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  size_t fused = 0;
  for (const auto& k : kernels_of(*g->mod, "decode_step"))
    fused += k.launch.kind == jit::LaunchRule::Attention;
  EXPECT_EQ(fused, 2u);
}

// Whether 8 consecutive elements along an axis of a view are consecutive in memory, from the
// shapes alone (Ctx::axis_contiguous, used to skip the kernels' per-chunk address checks): a head
// split and merge keep the innermost axis; a transpose of the innermost axis does not; a merge
// whose inner extent is not a multiple of 8 is not shown contiguous (conservative).
TEST(CodegenFusion, ViewRowsContiguityFromShapes) {
  auto c = compile_text("views.grp", R"(
weights { w: f16[768, 768] }
fn split_merge(x: f16[B, S, 768]) -> f16[B, S, 768] {
  return linear(reshape(transpose(transpose(reshape(x, (B, S, 12, 64)), 1, 2), 1, 2), (B, S, 768)), w)
}
fn transposed(x: f16[B, 64, 12]) -> f16[B, 768] {
  return linear(reshape(transpose(x, 1, 2), (B, 768)), w)
}
fn inner_twelve(x: f16[B, 12, 64]) -> f16[B, 768] {
  return linear(reshape(transpose(x, 1, 2), (B, 768)), w)
}
)");
  auto rows_of = [&](const char* entry) {
    auto ks = kernels_of(*c->mod, entry);
    EXPECT_EQ(ks.size(), 1u) << entry;
    const std::string& s = ks.at(0).source;
    EXPECT_NE(s.find("static constexpr bool kAView = true"), std::string::npos) << entry;
    return s.find("static constexpr bool kAViewRows = true") != std::string::npos;
  };
  EXPECT_TRUE(rows_of("split_merge"));
  EXPECT_FALSE(rows_of("transposed"));    // the last axis has stride 12
  EXPECT_FALSE(rows_of("inner_twelve"));  // a merge over (64, 12): runs of 12 elements
}

// Whether a view's address is a row part plus a k part (Ctx::axis_separable, kAViewSplit: the
// tiles compute each row's part once per tile instead of dividing by runtime dims per chunk and K
// step; the Hopper wgmma tiles take only such views). BERT's merge_heads, a row permutation and a
// slice of rows are; a reshape whose groups the shapes cannot show (a runtime dim inside a merge)
// and a view whose k runs are not consecutive are not.
TEST(CodegenFusion, ViewAddressesSplitIntoRowAndKParts) {
  auto c = compile_text("split.grp", R"(
weights { w: f16[768, 768] }
fn merge_heads(x: f16[2, 12, S, 64]) -> f16[2, S, 768] {
  return linear(reshape(transpose(x, 1, 2), (2, S, 768)), w)
}
fn permuted(x: f16[S, B, 768]) -> f16[B, S, 768] {
  return linear(transpose(x, 0, 1), w)
}
fn sliced_rows(x: f16[4, S, 768]) -> f16[2, S, 768] {
  return linear(x[1:3], w)
}
fn runtime_merge(x: f16[2, M, 768]) -> f16[2, M, 768] {
  return linear(reshape(transpose(reshape(x, (2, 12, M, 64)), 1, 2), (2, M, 768)), w)
}
fn strided_k(x: f16[B, 64, 12]) -> f16[B, 768] {
  return linear(reshape(transpose(x, 1, 2), (B, 768)), w)
}
)");
  auto split_of = [&](const char* entry) {
    auto ks = kernels_of(*c->mod, entry);
    EXPECT_EQ(ks.size(), 1u) << entry;
    const std::string& s = ks.at(0).source;
    EXPECT_NE(s.find("static constexpr bool kAView = true"), std::string::npos) << entry;
    const bool split = s.find("static constexpr bool kAViewSplit = true") != std::string::npos;
    EXPECT_EQ(split, s.find("grape_gemm_wgmma<Ops, 128>") != std::string::npos) << entry;
    EXPECT_EQ(split, ks.at(0).launch.wgmma) << entry;
    return split;
  };
  EXPECT_TRUE(split_of("merge_heads"));
  EXPECT_TRUE(split_of("permuted"));
  EXPECT_TRUE(split_of("sliced_rows"));
  EXPECT_FALSE(split_of("runtime_merge"));
  EXPECT_FALSE(split_of("strided_k"));
}

// Many (or a runtime number of) query rows in f16/bf16: one tensor-core attention kernel
// (jit/kernels/attention_mma.cuh), 64 query rows per block, head widths padded to 16; its source
// compiles with NVRTC. Heads wider than 128 stay unfused there.
TEST(CodegenFusion, PrefillAttentionRunsOnTensorCores) {
  auto c = compile_text("attn.grp", R"(
fn enc(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64], keep: bool[B, 1, 1, S]) -> f16[B, 12, S, 64] {
  let att = (q @ transpose(k, 2, 3)) * 0.125
  return softmax(where(keep, att, -10000.0), axis=-1) @ v
}
fn rows(q: bf16[2, 17, 40], k: bf16[2, 8, 40], v: bf16[2, 8, 24]) -> bf16[2, 17, 24] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
fn wide(q: f16[2, 32, 160], k: f16[2, 8, 160], v: f16[2, 8, 160]) -> f16[2, 32, 160] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
)");
  auto enc = kernels_of(*c->mod, "enc");
  ASSERT_EQ(enc.size(), 1u);
  EXPECT_EQ(enc[0].launch.kind, jit::LaunchRule::Attention);
  EXPECT_TRUE(enc[0].launch.attention_mma);
  // Two entry points: 64 rows, one warp per row group; and 32 rows, four warps per row group
  // (each a quarter of the keys).
  EXPECT_NE(enc[0].source.find("grape_attention_mma<Ops, 64, 64, 4, 1>"), std::string::npos);
  EXPECT_NE(enc[0].source.find("grape_attention_mma<Ops, 64, 64, 2, 4>"), std::string::npos);
  EXPECT_NE(enc[0].source.find(std::string("void __launch_bounds__(256) ") + jit::kKernelSymbol +
                               jit::kTensorCoreSuffix),
            std::string::npos);
  for (const char* f : {"kQRows = true", "kKRows = true", "kVRows = true"})
    EXPECT_NE(enc[0].source.find(f), std::string::npos) << f;
  auto d = scheduler::launch_dims(enc[0].launch, {{"B", 16}, {"S", 128}}, 132);
  EXPECT_EQ(d.block, 128u);  // 384 items: one warp per row group (keys1)
  EXPECT_EQ(d.grid, 16u * 12u * 2u);
  // q, two k and two v tiles of 64 rows padded to 72 halves; the statistics of 4 row groups x 2 key
  // halves x 16 rows. One pass (online softmax): no scores kept, whatever the number of keys.
  const unsigned tiles = 2u * (64 * 72 + 2 * 64 * 72 + 2 * 64 * 72), stats = 4u * 2 * 16 * 2 * 4;
  EXPECT_EQ(d.shared_bytes, tiles + stats);
  EXPECT_LE(d.shared_bytes, scheduler::kAttentionMmaMaxSharedBytes);
  d = scheduler::launch_dims(enc[0].launch, {{"B", 1}, {"S", 300}}, 132);
  EXPECT_EQ(d.grid, 12u * 10u);  // 60 items of 64 rows fit: the 8-warp entry, 32 rows per block
  EXPECT_EQ(d.block, 256u);      // (keys4: four warps per row group)
  EXPECT_EQ(d.shared_bytes, tiles + stats);
  d = scheduler::launch_dims(enc[0].launch, {{"B", 1}, {"S", 513}}, 132);
  EXPECT_EQ(d.shared_bytes, tiles + stats);
  auto rows = kernels_of(*c->mod, "rows");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_NE(rows[0].source.find("grape_attention_mma<Ops, 48, 32, 4, 1>"), std::string::npos);
  EXPECT_NE(rows[0].source.find("grape_attention_mma<Ops, 48, 32, 2, 4>"), std::string::npos);
  EXPECT_EQ(kernels_of(*c->mod, "wide").size(), 2u);
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  for (const auto& k : {enc[0], rows[0]}) {
    jit::CompileResult r = jit::compile_cuda(k.source, "attention_mma", "sm_90");
    EXPECT_FALSE(r.cubin.empty());
    EXPECT_FALSE(r.has_warnings()) << r.log;
  }
}

// A wider head than the kernel keeps in registers, or many (or a runtime number of) query rows
// in f32, stay two kernels (the unfused path).
TEST(CodegenFusion, AttentionWithWideHeadsOrManyQueriesIsNotFused) {
  auto c = compile_text("attn.grp", R"(
fn wide(q: f32[2, 8, 300], k: f32[2, 8, 300], v: f32[2, 8, 300]) -> f32[2, 8, 300] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
fn rows(q: f32[2, 17, 64], k: f32[2, 8, 64], v: f32[2, 8, 64]) -> f32[2, 17, 64] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
fn runtime_rows(q: f32[2, S, 64], k: f32[2, 8, 64], v: f32[2, 8, 64]) -> f32[2, S, 64] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
fn sixteen(q: f32[2, 16, 64], k: f32[2, 8, 64], v: f32[2, 8, 64]) -> f32[2, 16, 64] {
  return softmax(q @ transpose(k, 1, 2), axis=-1) @ v
}
)");
  EXPECT_EQ(kernels_of(*c->mod, "wide").size(), 2u);
  EXPECT_EQ(kernels_of(*c->mod, "rows").size(), 2u);
  EXPECT_EQ(kernels_of(*c->mod, "runtime_rows").size(), 2u);
  EXPECT_EQ(kernels_of(*c->mod, "sixteen").size(), 1u);
}

// select reads only the operand it chooses: the other may never have been written (issue 11).
TEST(CodegenFusion, SelectReadsOnlyTheChosenOperand) {
  auto c = compile_text("sel.grp", R"(
fn main(c: bool[], x: f32[64], y: f32[64]) -> f32[64] {
  var r = y * 2.0
  if c {
    r = x + 1.0
  }
  return r
}
)");
  const jit::KernelSpec* sel = nullptr;
  auto ks = kernels_of(*c->mod, "main");
  for (const auto& k : ks)
    if (k.root->op == ir::Op::Select) sel = &k;
  ASSERT_NE(sel, nullptr);
  const std::string b = body(*sel);
  SCOPED_TRACE(b);
  // Each operand's load sits inside its own branch.
  size_t branch = b.find("if (");
  size_t other = b.find("} else {");
  ASSERT_NE(branch, std::string::npos);
  ASSERT_NE(other, std::string::npos);
  std::vector<size_t> loads;
  for (size_t at = b.find("grape_ld_f32("); at != std::string::npos; at = b.find("grape_ld_f32(", at + 1))
    loads.push_back(at);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_GT(loads[0], branch);
  EXPECT_LT(loads[0], other);
  EXPECT_GT(loads[1], other);
}

// A kernel that instantiates a template of jit/kernels/: the template is in its source, the glue
// calls `call`, and the glue has no loop over a row's elements (the algorithm is the template's).
// Each compiles with NVRTC for sm_90 without warnings.
void expect_template(const jit::KernelSpec& k, const std::string& file, const std::string& call) {
  EXPECT_NE(k.source.find("#line 1 \"" + file + "\""), std::string::npos) << k.name;
  EXPECT_NE(body(k).find(call), std::string::npos) << body(k);
  EXPECT_EQ(body(k).find("for (long long j"), std::string::npos) << body(k);
}

void expect_compiles(const std::vector<jit::KernelSpec>& ks) {
  std::string why;
  if (!jit::nvrtc_available(&why)) GTEST_SKIP() << "NVRTC not available: " << why;
  for (const auto& k : ks) {
    jit::CompileResult r = jit::compile_cuda(k.source, k.name, "sm_90");
    EXPECT_FALSE(r.cubin.empty()) << r.log;
    EXPECT_FALSE(r.has_warnings()) << r.log;
  }
}

// An attention whose output is read only through BERT's merge of the heads stores each element at
// its merged place (scheduler/fusion.h, "Stores through a permute"): the permute is the attention
// group's root, the reshape after it an alias, and the next product reads a plain buffer (kADirect).
// Both attention kernels (decode's attention.cuh, the tensor-core one); an attention output that is
// also returned stays where it is and the product keeps its view.
TEST(CodegenFusion, AttentionStoresThroughTheMergeOfHeads) {
  auto c = compile_text("merge.grp", R"(
weights { w: f16[768, 768] }
fn enc(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64]) -> f16[B, S, 768] {
  let o = softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
  return linear(reshape(transpose(o, 1, 2), (B, S, 768)), w)
}
fn dec(q: f16[B, 12, 1, 64], k: f16[B, 12, T, 64], v: f16[B, 12, T, 64]) -> f16[B, 1, 768] {
  let o = softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
  return linear(reshape(transpose(o, 1, 2), (B, 1, 768)), w)
}
fn kept(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64]) -> (f16[B, 12, S, 64], f16[B, S, 768]) {
  let o = softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
  return (o, linear(reshape(transpose(o, 1, 2), (B, S, 768)), w))
}
)");
  for (const char* entry : {"enc", "dec", "kept"}) {
    SCOPED_TRACE(entry);
    const bool moved = std::string(entry) != "kept";
    const ir::Function* f = c->mod->find(entry);
    ASSERT_NE(f, nullptr);
    const auto plan = scheduler::plan_fusion(*f);
    ASSERT_EQ(plan.num_kernels(), 2u);
    const auto& att = plan.blocks[0].groups[0];
    ASSERT_NE(att.attention_scores, nullptr);
    EXPECT_EQ(att.root->op, moved ? ir::Op::Permute : ir::Op::MatMul);
    EXPECT_EQ(att.core->op, ir::Op::MatMul);
    auto ks = kernels_of(*c->mod, entry);
    ASSERT_EQ(ks.size(), 2u);
    EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::Attention);
    EXPECT_NE(ks[0].name.find("_matmul"), std::string::npos) << ks[0].name;
    EXPECT_EQ(ks[1].source.find("kADirect = true") != std::string::npos, moved);
    if (moved) {
      // Ops::store writes at [b / 12][i][b % 12][d] of the [B, S, 12, 64] result.
      const std::string& s = ks[0].source;
      const size_t at = s.find("__device__ static void store(");
      ASSERT_NE(at, std::string::npos);
      check_golden(std::string("attention_store_merged_heads_") + entry,
                   s.substr(at, s.find("\n  }\n", at) - at));
    }
    expect_compiles(ks);
  }
}

// The tensor-core attention writes its output rows itself (Ops::kOutAt, jit/kernels/attention_mma.cuh)
// where it stores the product's rounded result unchanged along a unit-stride last axis: through the
// merge of the heads, into its own [B, 12, S, 64] buffer, or in f16 from bf16 operands never (the
// rounding differs), and never behind an epilogue. Decode (attention.cuh) has no such address.
TEST(CodegenFusion, AttentionRowsGoOutWholeWithoutAnEpilogue) {
  auto c = compile_text("rows.grp", R"(
weights { w: f16[768, 768] }
fn merged(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64]) -> f16[B, S, 768] {
  let o = softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
  return linear(reshape(transpose(o, 1, 2), (B, S, 768)), w)
}
fn plain(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64]) -> f16[B, 12, S, 64] {
  return softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
}
fn scaled(q: f16[B, 12, S, 64], k: f16[B, 12, S, 64], v: f16[B, 12, S, 64]) -> f16[B, 12, S, 64] {
  return (softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v) * 2.0
}
fn dec(q: f16[B, 12, 1, 64], k: f16[B, 12, T, 64], v: f16[B, 12, T, 64]) -> f16[B, 12, 1, 64] {
  return softmax((q @ transpose(k, 2, 3)) * 0.125, axis=-1) @ v
}
)");
  struct Want {
    const char* entry;
    const char* out_at;  // the kOutAt line, or null where Ops has none
  };
  for (const Want& w : {Want{"merged", "kOutAt = true"}, Want{"plain", "kOutAt = true"},
                        Want{"scaled", "kOutAt = false"}, Want{"dec", nullptr}}) {
    SCOPED_TRACE(w.entry);
    auto ks = kernels_of(*c->mod, w.entry);
    ASSERT_GE(ks.size(), 1u);
    ASSERT_EQ(ks[0].launch.kind, jit::LaunchRule::Attention);
    const std::string& s = ks[0].source;
    if (!w.out_at) {
      EXPECT_EQ(s.find("kOutAt"), std::string::npos);
    } else {
      EXPECT_NE(s.find(w.out_at), std::string::npos);
      const size_t at = s.find("__device__ static T* out_at(");
      ASSERT_NE(at, std::string::npos);
      if (std::string(w.entry) != "scaled")
        check_golden(std::string("attention_out_at_") + w.entry, s.substr(at, s.find("\n  }\n", at) - at));
    }
    expect_compiles(ks);
  }
}

// Reductions and arg-reductions (jit/kernels/reduce.cuh) over rows of a runtime length, of every
// accumulator type, to a scalar, and along a leading axis: one block of 256 threads per row.
TEST(CodegenTemplates, ReductionsTakeReduceCuh) {
  auto c = compile_text("reduce.grp", R"(
fn main(x: f32[R, N], h: f16[R, N], n: i32[R, N], m: bool[R, N]) -> (f32[R], f16[R, 1], i32[R], bool[R], f32[], i32[R], i32[N]) {
  return (sum(x * 2.0, axis=1), mean(h * 2.0, axis=1, keepdims=true), max(n, axis=1), any(m, axis=1), sum(x),
          argmax(x, axis=1), argmin(h, axis=0))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 7u);
  int reductions = 0, arg_reductions = 0;
  for (const auto& k : ks) {
    EXPECT_EQ(k.launch.kind, jit::LaunchRule::Rows);
    const bool arg = k.root->op == ir::Op::ArgMax || k.root->op == ir::Op::ArgMin;
    expect_template(k, "reduce.cuh", arg ? "grape_arg_reduce_rows<Ops>(p);" : "grape_reduce_rows<Ops>(p);");
    EXPECT_FALSE(k.launch.cluster_rows);  // rows of a runtime length: never a cluster
    (arg ? arg_reductions : reductions)++;
    if (k.root->op == ir::Op::Mean) check_golden("reduce_rows", body(k));
  }
  EXPECT_EQ(reductions, 5);
  EXPECT_EQ(arg_reductions, 2);
  auto d = scheduler::launch_dims(ks[0].launch, {{"R", 300}, {"N", 5000}}, 132);
  EXPECT_EQ(d.grid, 300u);
  EXPECT_EQ(d.block, 256u);
  EXPECT_EQ(scheduler::launch_dims(ks[0].launch, {{"R", 3}, {"N", 50000}}, 132, true).cluster, 1);
  expect_compiles(ks);
}

// Reductions of rows of a known length from 8192 on: 1024 threads, and on sm_90 a few rows take a
// cluster of blocks each (generate's argmax over 5 x 50257 logits: 8 blocks a row).
TEST(CodegenTemplates, FewLongKnownRowsTakeClustersOnHopper) {
  auto c = compile_text("long_reduce.grp", R"(
fn main(x: f32[R, 50257], n: i32[R, 9000]) -> (i32[R], i32[R], f32[R]) {
  return (argmax(x, axis=-1), sum(n, axis=1), mean(x, axis=1))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 3u);
  for (const auto& k : ks) {
    EXPECT_TRUE(k.launch.cluster_rows) << k.name;
    EXPECT_EQ(k.launch.threads, 1024);
    const bool long_row = k.root->op != ir::Op::Sum;
    auto h = scheduler::launch_dims(k.launch, {{"R", 5}}, 132, true);
    EXPECT_EQ(h.cluster, long_row ? 8 : 2) << k.name;
    EXPECT_EQ(h.grid, long_row ? 40u : 10u) << k.name;
    auto old = scheduler::launch_dims(k.launch, {{"R", 5}}, 132, false);
    EXPECT_EQ(old.cluster, 1);
    EXPECT_EQ(old.grid, 5u);
  }
  expect_compiles(ks);
}

// cumsum (jit/kernels/scan.cuh), float with a fused prologue and integer, along the last and a
// leading axis.
TEST(CodegenTemplates, CumsumTakesScanCuh) {
  auto c = compile_text("scan.grp", R"(
fn main(x: f16[R, N], n: i32[R, N]) -> (f16[R, N], i32[R, N], f16[R, N]) {
  return (cumsum(x * 2.0, axis=1), cumsum(n, axis=1), cumsum(x, axis=0))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 3u);
  for (const auto& k : ks) {
    EXPECT_EQ(k.launch.kind, jit::LaunchRule::Rows);
    expect_template(k, "scan.cuh", "grape_cumsum_row<Ops>(p, row);");
  }
  expect_compiles(ks);
}

// Norms and softmax over rows longer than 1024 or of a runtime length take row_norm.cuh's
// block-per-row kernel: 256 threads, 1024 from 8192 columns on.
TEST(CodegenTemplates, LongAndRuntimeRowNormsTakeTheBlockKernel) {
  auto c = compile_text("long_norms.grp", R"(
weights { g: f16[2000]
          b: f16[2000] }
fn main(x: f32[R, N], h: f16[R, 2000], y: f32[R, 9000]) -> (f32[R, N], f16[R, 2000], f16[R, 2000], f32[R, 9000], f32[N, R]) {
  return (softmax(x, axis=-1), layer_norm(h, g, b), rms_norm(h * 2.0, g, eps=2), log_softmax(y, axis=-1) + 1.0,
          log_softmax(transpose(x, 0, 1), axis=0))
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 5u);
  for (const auto& k : ks) {
    EXPECT_EQ(k.launch.kind, jit::LaunchRule::Rows);
    expect_template(k, "row_norm.cuh", "grape_row_norm_rows<Ops>(p);");
    EXPECT_NE(k.source.find("#line 1 \"cluster.cuh\""), std::string::npos);
    const bool wide = body(k).find("9000LL") != std::string::npos;
    EXPECT_NE(body(k).find(wide ? "__launch_bounds__(1024)" : "__launch_bounds__(256)"), std::string::npos);
    auto d = scheduler::launch_dims(k.launch, {{"R", 7}, {"N", 3000}}, 132);
    EXPECT_EQ(d.block, wide ? 1024u : 256u);
    EXPECT_EQ(d.grid, 7u);  // a block per row
    EXPECT_EQ(d.cluster, 1);
    // On a device with clusters (sm_90), the 9000-long rows take two blocks each while 7 rows
    // leave the GPU idle; 200 rows fill it, one block each. The others never take clusters.
    auto h = scheduler::launch_dims(k.launch, {{"R", 7}, {"N", 3000}}, 132, true);
    EXPECT_EQ(h.cluster, wide ? 2 : 1);
    EXPECT_EQ(h.grid, wide ? 14u : 7u);
    auto many = scheduler::launch_dims(k.launch, {{"R", 200}, {"N", 3000}}, 132, true);
    EXPECT_EQ(many.cluster, 1);
    EXPECT_EQ(many.grid, 200u);
    if (wide) {
      // A beam search's 5 rows of 50257: the portable cluster size, 8 blocks a row.
      jit::LaunchRule beam = k.launch;
      beam.items = {5};
      beam.row_len = 50257;
      auto b = scheduler::launch_dims(beam, {}, 132, true);
      EXPECT_EQ(b.cluster, 8);
      EXPECT_EQ(b.grid, 40u);
      EXPECT_EQ(scheduler::launch_dims(beam, {}, 132, false).cluster, 1);
    }
  }
  expect_compiles(ks);
}

// topk with k > 16 (the k-pass kernel of topk.cuh), float and integer rows, k = 32.
TEST(CodegenTemplates, TopKOfManyTakesThePassKernel) {
  auto c = compile_text("topk32.grp", R"(
fn main(x: f16[R, C], n: i32[R, C]) -> (f16[R, 32], i32[R, 32], i32[R, 32]) {
  let v, i = topk(x * 2.0, 32)
  let vn, jn = topk(n, 32)
  return (v, i, jn)
}
)");
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 2u);
  for (const auto& k : ks) {
    expect_template(k, "topk.cuh", "grape_topk_passes<Ops>(p, row);");
    EXPECT_NE(body(k).find("static constexpr long long kK = 32;"), std::string::npos);
  }
  expect_compiles(ks);
}

// slice_update (jit/kernels/slice_update.cuh): in place (a state, a dynamic start) and as a copy
// (the value reads x elsewhere). Writes into layers 1 and 2 of a stacked state are one source
// (the layer's offset an extra[] slot, Ctx::buffer_offset), as before the template.
TEST(CodegenTemplates, SliceUpdatesTakeSliceUpdateCuh) {
  auto c = compile_text("su.grp", R"(
state kc: f16[3, 4, 16, 8] = zeros
fn write(k: f16[4, 8], pos: i32[], l: int) -> f16[4, 8] {
  kc[l, :, pos, :] = k * 2.0
  return k
}
fn main(k: f16[4, 8], pos: i32[]) -> f16[4, 8] {
  var y = k
  for l in 0..3 {
    y = write(y, pos, l)
  }
  return kc[2, :, 0, :]
}
fn copy(x: f32[6, N]) -> f32[6, N] {
  var y = x
  y[1:3, 0:4] = x[2:4, 0:4] + 1.0
  return y
}
)");
  auto ks = kernels_of(*c->mod, "main");
  std::vector<const jit::KernelSpec*> writes;
  for (const auto& k : ks)
    if (k.root->op == ir::Op::SliceUpdate) writes.push_back(&k);
  ASSERT_EQ(writes.size(), 3u);
  for (const auto* k : writes) {
    EXPECT_EQ(k->aliases.size(), 1u);
    expect_template(*k, "slice_update.cuh", "grape_slice_update_in_place<Ops>(p, s, gi);");
  }
  EXPECT_NE(writes[0]->source, writes[1]->source);  // layer 0: no offset
  EXPECT_EQ(writes[1]->source, writes[2]->source);
  check_golden("slice_update_in_place", body(*writes[1]));
  auto cp = kernels_of(*c->mod, "copy");
  ASSERT_EQ(cp.size(), 1u);
  EXPECT_TRUE(cp[0].aliases.empty());
  expect_template(cp[0], "slice_update.cuh", "grape_slice_update_copy<Ops>(p, s, gi);");
  std::vector<jit::KernelSpec> all;
  for (const auto* k : writes) all.push_back(*k);
  all.push_back(cp[0]);
  expect_compiles(all);
}

// A residual add whose only use is the layer norm fused into a product (GPT-2's lm_head) is the
// epilogue of the product before it, not recomputed element by element in every column tile of
// the normed product, which then stages its A by 16-byte loads (kAVec).
TEST(CodegenFusion, ArithmeticBeforeANormPrologueIsMaterialised) {
  auto c = compile_text("norm_prologue.grp", R"(
weights { w1: f16[64, 32]
          w2: f16[512, 64]
          g: f16[64]
          b: f16[64] }
fn main(x: f16[B, 32], r: f16[B, 64]) -> f16[B, 512] {
  let h = r + linear(x, w1)
  return linear(layer_norm(h, g, b), w2)
}
)");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  ASSERT_EQ(plan.num_kernels(), 2u);
  const auto& first = plan.blocks[0].groups[0];
  const auto& second = plan.blocks[0].groups[1];
  EXPECT_EQ(first.root->op, ir::Op::Add) << "the residual add is the first product's epilogue";
  ASSERT_NE(second.row_prologue, nullptr);
  EXPECT_EQ(second.row_prologue->op, ir::Op::LayerNorm);
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_NE(ks[1].source.find("static constexpr bool kAVec = true;"), std::string::npos);
  expect_compiles(ks);
}

// Sibling updates (scheduler/fusion.h): independent slice writes next to each other are one kernel
// over both regions, placed where the last one was; each part keeps its own entry (in place or a
// copy) and the in-place ones their aliases. Writes into one buffer, one after the other, and
// writes with a kernel between them stay apart.
TEST(CodegenFusion, SiblingUpdatesAreOneKernel) {
  auto c = compile_text("sibling_updates.grp", R"(
state kc: f16[2, B, 4, 16, 8] = zeros
state vc: f16[2, B, 4, 16, 8] = zeros
state sc: f16[2, 4, 16, 8] = zeros
state sd: f16[2, 4, 16, 8] = zeros
state wa: f16[2, 1100] = zeros
state wb: f16[2, 1100] = zeros
fn small_parts(a: f16[600], b: f16[600]) -> f16[600] {
  wa[0, 0:600] = a
  wb[0, 0:600] = b
  return a
}
fn alias_read(a: f16[1100], b: f16[1100]) -> f16[1100] {
  let flat = reshape(wa, (2200))
  wa[1, :] = a
  wb[1, :] = flat[0:1100] + flat[1100:2200]
  return b
}
fn large_parts(a: f16[1100], b: f16[1100]) -> f16[1100] {
  wa[1, :] = a
  wb[1, :] = b
  return a
}
fn cache(x: f16[B, 64], p: i32[]) -> f16[B, 4, 16, 8] {
  let k, v = split(x, 2, axis=-1)
  kc[1, :, :, p, :] = reshape(k, (B, 4, 8))
  vc[1, :, :, p, :] = reshape(v, (B, 4, 8)) * 2.0
  return kc[1] + vc[1]
}
fn mixed(k: f32[4, 8], x: f32[6, N]) -> (f32[4, 8], f32[6, N]) {
  sc[0, :, 3, :] = cast(k, f16)
  var y = x
  y[1:3, 0:4] = x[2:4, 0:4] + 1.0
  return (cast(sc[0, :, 3, :], f32), y)
}
fn chained(k: f16[4, 8], p: i32[]) -> f16[4, 8] {
  sc[0, :, p, :] = k
  sc[1, :, p, :] = k * 2.0
  return sc[1, :, 0, :]
}
fn between(k: f16[4, 8], p: i32[]) -> f16[4, 8] {
  sc[0, :, p, :] = k
  let s = sum(sc[0], axis=1)
  sd[0, :, p, :] = s
  return sd[0, :, 0, :]
}
)");
  const ir::Function* f = c->mod->find("cache");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  const scheduler::FusionGroup* updates = nullptr;
  for (const auto& g : plan.blocks[0].groups)
    if (g.root->op == ir::Op::SliceUpdate) {
      EXPECT_EQ(updates, nullptr) << "one kernel writes both caches";
      updates = &g;
    }
  ASSERT_NE(updates, nullptr);
  ASSERT_EQ(updates->parts.size(), 2u);
  EXPECT_EQ(updates->root, updates->parts[1].root) << "launched where the last write was";
  EXPECT_EQ(plan.roles.at(updates->parts[0].root), scheduler::OpRole::PartRoot);
  EXPECT_EQ(plan.roles.at(updates->parts[1].root), scheduler::OpRole::Root);
  EXPECT_EQ(updates->outputs.size(), 2u);
  auto ks = kernels_of(*c->mod, "cache");
  const jit::KernelSpec* k = nullptr;
  for (const auto& s : ks)
    if (s.root->op == ir::Op::SliceUpdate) k = &s;
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->aliases.size(), 2u) << "both caches are written in place";
  for (const auto& [out, in] : k->aliases) {
    EXPECT_GE(out, k->num_inputs);
    EXPECT_LT(in, k->num_inputs);
  }
  EXPECT_NE(k->aliases[0].second, k->aliases[1].second);
  expect_template(*k, "slice_update.cuh", "if (gi < n0) grape_slice_update_in_place<Ops0>(p, s0, gi);");
  EXPECT_NE(k->source.find("else grape_slice_update_in_place<Ops1>(p, s1, gi - b1);"), std::string::npos);
  ASSERT_EQ(k->launch.items.size(), 1u);
  EXPECT_EQ(k->launch.items[0], ir::Dim::sym("B") * 64) << "both regions' elements";
  check_golden("sibling_updates_glue", body(*k));

  auto mixed = kernels_of(*c->mod, "mixed");
  const jit::KernelSpec* m = nullptr;
  for (const auto& s : mixed)
    if (s.root->op == ir::Op::SliceUpdate) {
      EXPECT_EQ(m, nullptr);
      m = &s;
    }
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->aliases.size(), 1u) << "the state in place, y as a copy";
  EXPECT_NE(m->source.find("grape_slice_update_in_place<Ops0>"), std::string::npos);
  EXPECT_NE(m->source.find("grape_slice_update_copy<Ops1>"), std::string::npos);

  size_t chained = 0, between = 0;
  for (const auto& s : kernels_of(*c->mod, "chained")) chained += s.root->op == ir::Op::SliceUpdate;
  for (const auto& s : kernels_of(*c->mod, "between")) between += s.root->op == ir::Op::SliceUpdate;
  EXPECT_EQ(chained, 2u) << "the second write updates the first's result";
  EXPECT_EQ(between, 2u) << "a kernel between them reads the first's result";
  // Two writes that each fit a block sequence (600 elements) are not merged into one that does
  // not (1200); two that do not fit anyway are.
  EXPECT_EQ(kernels_of(*c->mod, "small_parts").size(), 2u);
  EXPECT_EQ(kernels_of(*c->mod, "large_parts").size(), 1u);
  // The second write reads the first's buffer through a view of its bytes (an alias): apart.
  size_t alias_updates = 0;
  for (const auto& s : kernels_of(*c->mod, "alias_read")) alias_updates += s.root->op == ir::Op::SliceUpdate;
  EXPECT_EQ(alias_updates, 2u);
  std::vector<jit::KernelSpec> all = {*k, *m};
  expect_compiles(all);
}

// A decode step inside an `if` (beam search's `if t < N - 1 { logits = beam_decode(next) }`):
// the new key row is a view of the predicated product (a head split, then row 0 of the
// permuted heads), and the cache update reads it through the select the branch leaves. The
// views are computed inside the update's kernel, as they are without the `if`: before, the
// row-0 slice (a view of the same bytes) was kept as an alias because its user was not under its
// predicate, which made its permute a kernel of its own (24 extra kernels per beam_search step).
// Here the caches are read between the product and their writes, so the writes stay a kernel of
// their own (not folded into the product, CodegenFusion.UpdatesOfAProductsViewsAreItsEpilogue).
TEST(CodegenFusion, ViewsUnderAnIfFeedTheBranchsStateUpdateWithoutAKernel) {
  auto c = compile_text("branch_cache.grp", R"(
state kc: f16[2, 5, 12, 16, 64] = zeros
state vc: f16[2, 5, 12, 16, 64] = zeros
state pos: i32[] = zeros
fn step(x: f16[5, 1, 768], w: f16[768, 2304], go: bool[]) -> f16[5, 1, 768] {
  var y = x
  if go {
    let qkv = x @ w
    let seen = sum(kc[1, :, :, 0, :], axis=2) + sum(vc[1, :, :, 0, :], axis=2)
    let k = transpose(reshape(qkv[:, :, 768:1536], (5, 1, 12, 64)), 1, 2)
    let v = transpose(reshape(qkv[:, :, 1536:2304], (5, 1, 12, 64)), 1, 2)
    kc[1, :, :, pos, :] = k[:, :, 0, :]
    vc[1, :, :, pos, :] = v[:, :, 0, :]
    y = x + qkv[:, :, 0:768] + reshape(expand(reshape(seen, (5, 1, 12, 1)), (5, 1, 12, 64)), (5, 1, 768))
  }
  return y
}
)");
  auto ks = kernels_of(*c->mod, "step");
  size_t updates = 0, reductions = 0;
  for (const auto& k : ks) {
    EXPECT_NE(k.root->op, ir::Op::Permute) << "the heads' permute is a view inside the update";
    EXPECT_NE(k.root->op, ir::Op::Slice);
    updates += k.root->op == ir::Op::SliceUpdate;
    for (const ir::Operation* op : k.ops) reductions += op->op == ir::Op::Sum && op == k.ops.back();
  }
  EXPECT_EQ(updates, 1u) << "both caches in one kernel, as without the `if`";
  EXPECT_GE(reductions, 1u) << "the caches' reads between the product and the writes";
  EXPECT_EQ(ks.size(), 3u + reductions) << "the product, the reads, the cache writes, the residual add";
  expect_compiles(ks);
}

// Folded updates (scheduler/fusion.h): a slice_update whose value is views of a matrix product's
// output is stored by the product's epilogue — a decode step's key and value rows, also under an
// `if` (the select form) — and the product's kernel updates the caches in place. Not folded: an
// update with arithmetic on the views, one whose destination a kernel between them reads, one
// through a broadcast, one under another predicate than the product's.
TEST(CodegenFusion, UpdatesOfAProductsViewsAreItsEpilogue) {
  auto c = compile_text("folded_updates.grp", R"(
state kc: f16[2, B, 12, 16, 64] = zeros
state vc: f16[2, B, 12, 16, 64] = zeros
state bc: f16[2, 5, 12, 16, 64] = zeros
state rows: f16[4, 768] = zeros
fn decode(x: f16[B, 1, 768], w: f16[768, 2304], p: i32[]) -> f16[B, 1, 768] {
  let qkv = x @ w
  let k = transpose(reshape(qkv[:, :, 768:1536], (B, 1, 12, 64)), 1, 2)
  let v = transpose(reshape(qkv[:, :, 1536:2304], (B, 1, 12, 64)), 1, 2)
  kc[1, :, :, p, :] = k[:, :, 0, :]
  vc[1, :, :, p, :] = v[:, :, 0, :]
  return qkv[:, :, 0:768]
}
fn branch(x: f16[5, 1, 768], w: f16[768, 2304], go: bool[], p: i32[]) -> f16[5, 1, 768] {
  var y = x
  if go {
    let qkv = x @ w
    bc[0, :, :, p, :] = transpose(reshape(qkv[:, :, 768:1536], (5, 1, 12, 64)), 1, 2)[:, :, 0, :]
    y = x + qkv[:, :, 0:768]
  }
  return y
}
fn arithmetic(x: f16[4, 768], w: f16[768, 768], p: i32[]) -> f16[4, 768] {
  let y = x @ w
  rows[p] = y[0] * 2.0
  return y
}
fn read_between(x: f16[4, 768], w: f16[768, 768], p: i32[]) -> (f16[4, 768], f16[]) {
  let y = x @ w
  let s = sum(rows)
  rows[p] = y[1]
  return (y, s)
}
fn broadcast(x: f16[1, 768], w: f16[768, 768]) -> f16[1, 768] {
  let y = x @ w
  rows[0:4, :] = expand(y, (4, 768))
  return y
}
fn other_predicate(x: f16[4, 768], w: f16[768, 768], go: bool[]) -> f16[4, 768] {
  let y = x @ w
  if go {
    rows[2] = y[3]
  }
  return y
}
)");
  auto folded_in = [&](const char* fn) {
    const ir::Function* f = c->mod->find(fn);
    EXPECT_NE(f, nullptr) << fn;
    size_t updates = 0, folded = 0;
    if (!f) return std::pair<size_t, size_t>{0, 0};
    const auto plan = scheduler::plan_fusion(*f);
    for (const auto& b : plan.blocks)
      for (const auto& g : b.groups) {
        updates += g.root->op == ir::Op::SliceUpdate;
        for (const auto& fu : g.folded_updates) {
          ++folded;
          EXPECT_NE(std::find(g.outputs.begin(), g.outputs.end(), fu.source), g.outputs.end()) << fn;
          EXPECT_NE(std::find(g.outputs.begin(), g.outputs.end(), fu.update->results[0]), g.outputs.end())
              << fn;
          EXPECT_EQ(plan.roles.at(fu.update), scheduler::OpRole::PartRoot) << fn;
          EXPECT_TRUE(g.core && (g.core->op == ir::Op::MatMul || g.core->op == ir::Op::Linear)) << fn;
        }
      }
    return std::pair<size_t, size_t>{updates, folded};
  };
  EXPECT_EQ(folded_in("decode"), (std::pair<size_t, size_t>{0, 2})) << "both cache rows in the product";
  EXPECT_EQ(folded_in("branch"), (std::pair<size_t, size_t>{0, 1})) << "the select form";
  EXPECT_EQ(folded_in("arithmetic"), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(folded_in("read_between"), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(folded_in("broadcast"), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(folded_in("other_predicate"), (std::pair<size_t, size_t>{1, 0}));

  auto ks = kernels_of(*c->mod, "decode");
  ASSERT_FALSE(ks.empty());
  const jit::KernelSpec& k = ks[0];
  ASSERT_TRUE(k.root && std::any_of(k.ops.begin(), k.ops.end(),
                                    [](const ir::Operation* op) { return op->op == ir::Op::MatMul; }));
  ASSERT_EQ(k.aliases.size(), 2u) << "both caches are updated in place";
  for (const auto& [out, in] : k.aliases) {
    EXPECT_GE(out, k.num_inputs);
    EXPECT_LT(in, k.num_inputs);
  }
  // Each element of qkv's k (v) third goes to its head h = (n - 768) / 64, width (n - 768) % 64,
  // of batch row r, at the clamped position p.
  EXPECT_NE(k.source.find("grape_dyn_start("), std::string::npos);
  EXPECT_NE(k.source.find("(n - 768LL) >= 0 && (n - 768LL) < 768LL"), std::string::npos);
  EXPECT_NE(k.source.find("(n - 1536LL) >= 0 && (n - 1536LL) < 768LL"), std::string::npos);
  check_golden("folded_updates_glue", body(k));
  auto branch = kernels_of(*c->mod, "branch");
  ASSERT_EQ(branch.size(), 2u) << "the product with the cache row, the residual add";
  EXPECT_NE(branch[0].pred, ir::kNoValue) << "the product runs where `go` holds";
  EXPECT_EQ(branch[0].aliases.size(), 1u);
  expect_compiles(ks);
  expect_compiles(branch);
}

// Sibling products (scheduler/fusion.h): linears of one A become one kernel over their columns;
// each part keeps its epilogue and output, and the weight row and the store go to the part that
// holds the column.
TEST(CodegenFusion, SiblingProductsOfOneInputAreOneKernel) {
  auto c = compile_text("siblings.grp", R"(
weights { wq: f16[64, 128]
          bq: f16[64]
          wk: f16[200, 128]
          wv: f16[96, 128]
          bv: f16[96] }
fn main(x: f16[B, 128], r: f16[B, 96]) -> (f16[B, 64], f16[B, 200], f16[B, 96]) {
  return (linear(x, wq, bq), gelu(linear(x, wk)), linear(x, wv, bv) + r)
}
)");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  ASSERT_EQ(plan.num_kernels(), 1u);
  const auto& g = plan.blocks[0].groups[0];
  ASSERT_EQ(g.parts.size(), 3u);
  EXPECT_EQ(g.outputs.size(), 3u);
  EXPECT_EQ(plan.roles.at(g.parts[0].root), scheduler::OpRole::Root);
  EXPECT_EQ(plan.roles.at(g.parts[1].root), scheduler::OpRole::PartRoot);
  EXPECT_EQ(plan.roles.at(g.parts[2].root), scheduler::OpRole::PartRoot);
  auto ks = kernels_of(*c->mod, "main");
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0].launch.kind, jit::LaunchRule::MatrixProduct);
  EXPECT_TRUE(ks[0].launch.items[1].is_const(360));  // 64 + 200 + 96 columns
  check_golden("sibling_products_glue", body(ks[0]));
  expect_compiles(ks);
}

// A later product joins only when what it reads exists where the first one runs; products of
// different inputs or under different predicates stay apart.
TEST(CodegenFusion, SiblingProductsJoinOnlyWhenTheirInputsAreReady) {
  auto c = compile_text("siblings_apart.grp", R"(
weights { w1: f16[32, 64]
          w2: f16[32, 64]
          w3: f16[32, 64]
          w4: f16[32, 32] }
fn main(x: f16[B, 64], y: f16[B, 64], flag: bool[]) -> (f16[B, 32], f16[B, 32], f16[B, 32], f16[B, 32]) {
  let a = linear(x, w1)
  let s = softmax(a, axis=-1)
  let b = linear(x, w2) + s
  let d = linear(y, w3)
  var e = linear(s, w4)
  if flag {
    e = linear(x, w2)
  }
  return (a, b, d, e)
}
)");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  for (const auto& bp : plan.blocks)
    for (const auto& g : bp.groups) EXPECT_TRUE(g.parts.empty()) << ir::op_name(g.root->op);
}

// At most kMaxSiblingParts products in one kernel, and never more buffers than the parameter block
// holds: six linears of one A with bias and residual epilogues (four buffers each) become kernels
// of at most four parts and sixteen buffers that all compile.
TEST(CodegenFusion, SiblingProductsStayWithinThePartAndBufferLimits) {
  std::string w, body, outs, rets;
  for (int i = 0; i < 6; ++i) {
    const std::string n = std::to_string(i);
    w += "  w" + n + ": f16[32, 64]\n  b" + n + ": f16[32]\n";
    outs += std::string(i ? ", " : "") + "f16[B, 32]";
    rets += std::string(i ? ", " : "") + "linear(x, w" + n + ", b" + n + ") + r" + n;
    body += ", r" + n + ": f16[B, 32]";
  }
  auto c = compile_text("siblings_many.grp", "weights {\n" + w + "}\nfn main(x: f16[B, 64]" + body +
                                                 ") -> (" + outs + ") {\n  return (" + rets + ")\n}\n");
  const ir::Function* f = c->mod->find("main");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  size_t products = 0;
  for (const auto& g : plan.blocks[0].groups) {
    EXPECT_LE(g.parts.size(), scheduler::kMaxSiblingParts);
    EXPECT_LE(g.inputs.size() + g.outputs.size(), scheduler::kMaxSiblingBuffers);
    products += g.parts.empty() ? 1 : g.parts.size();
  }
  EXPECT_EQ(products, 6u);
  EXPECT_LT(plan.num_kernels(), 6u);
  expect_compiles(kernels_of(*c->mod, "main"));
}

// BERT's q, k and v projections: one kernel per layer.
TEST(CodegenFusion, BertQkvProjectionsAreOneKernelPerLayer) {
  auto c = compile_file("examples/bert.grp");
  ASSERT_TRUE(c->mod);
  const ir::Function* f = c->mod->find("forward");
  ASSERT_NE(f, nullptr);
  const auto plan = scheduler::plan_fusion(*f);
  size_t merged = 0;
  for (const auto& bp : plan.blocks)
    for (const auto& g : bp.groups)
      if (!g.parts.empty()) {
        EXPECT_EQ(g.parts.size(), 3u);
        ++merged;
      }
  EXPECT_EQ(merged, 12u);
  std::cout << "bert forward: " << plan.num_kernels() << " kernels\n";
}

size_t count_kernels(const ir::Module& m, const std::string& entry) {
  const ir::Function* f = m.find(entry);
  return f ? scheduler::plan_fusion(*f).num_kernels() : 0;
}

TEST(CodegenFusion, Gpt2DecodeKernelCount) {
  auto c = compile_file("examples/gpt2.grp");
  ASSERT_TRUE(c->mod);
  size_t n = count_kernels(*c->mod, "decode");
  std::cout << "gpt2 decode (L=12): " << n << " kernels per step (PyTorch eager: 221)\n";
  EXPECT_LT(n, 110u);
  for (const auto& f : c->mod->functions)
    std::cout << "  gpt2 " << f.name << ": " << count_kernels(*c->mod, f.name) << " kernels\n";
}

}  // namespace
}  // namespace grape
