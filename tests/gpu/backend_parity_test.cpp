// The CUDA backend against the CPU reference: every example at tiny sizes, every hand-written
// control-flow case of the differential tests, and a program per op and dtype. Results must agree
// (relative L2 <= 1e-4 for f32, <= 1e-2 for f16/bf16, exact for integers and bools) before
// anything on the GPU is timed. Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

// Compares an eager CUDA session with the CPU.
void compare(const std::shared_ptr<Model>& m, const std::string& entry, const std::vector<Inputs>& calls,
             const std::string& what) {
  compare_with_cpu(m, entry, calls, "eager", what);
}

TEST(GpuParity, Mlp) {
  REQUIRE_GPU();
  auto m = tiny_mlp();
  compare(m, "main", {{{"x", sample(DType::F16, {3, 32}, 1)}}}, "mlp");
}

TEST(GpuParity, Gpt2ForwardAndDecode) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  compare(m, "forward", {{{"ids", sample(DType::I32, {2, 5}, 2, 128)}}}, "gpt2 forward");
  compare(m, "decode_step", decode_step_calls(), "gpt2 decode_step");
}

TEST(GpuParity, Gpt2GreedyAndBeamTokens) {
  REQUIRE_GPU();
  auto m = tiny_gpt2();
  compare(m, "generate",
          {{{"prompt", sample(DType::I32, {2, 4}, 6, 128)}, {"max_new", Tensor::scalar_i32(8)}}},
          "gpt2 generate");
  compare(m, "beam_search", {{{"prompt", sample(DType::I32, {1, 4}, 7, 128)}}}, "gpt2 beam_search");
}

TEST(GpuParity, Bert) {
  REQUIRE_GPU();
  ModelOptions o;
  o.defines = {{"L", 2}, {"H", 64}, {"NH", 4}, {"I", 256}, {"V", 128}, {"P", 64}};
  auto m = Model::load_file(source_dir() + "/examples/bert.grp", o);
  m->set_random_weights(4);
  Tensor mask(DType::Bool, {2, 6});
  for (int64_t i = 0; i < 12; ++i) mask.set(i, i % 6 < 4 + (i / 6));
  compare(m, "forward", {{{"ids", sample(DType::I32, {2, 6}, 8, 128)}, {"mask", mask}}}, "bert forward");
}

// The differential tests' hand-written control-flow cases, each called three times per session.
TEST(GpuParity, ControlFlowCases) {
  REQUIRE_GPU();
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    SCOPED_TRACE(e.path().filename().string());
    auto m = Model::load_source(read_text(e.path().string()), e.path().string());
    Session probe(m, "main");
    std::vector<Inputs> calls;
    for (uint32_t c = 0; c < 3; ++c) calls.push_back(sample_inputs(probe.inputs(), c, 3));
    compare(m, "main", calls, e.path().filename().string());
  }
}

// gelu element by element over [-12, 12] and the infinities (jit/kernels/prelude.cuh computes
// erfc by a Chebyshev fit, the CPU by std::erfc): f32 within 1e-4 of each value (relative, or
// 1e-30 absolute in the underflowing tail), f16 and bf16 within one unit in the last place.
TEST(GpuParity, GeluEveryValueCloseToTheCpu) {
  REQUIRE_GPU();
  for (const char* dt : {"f32", "f16", "bf16"}) {
    SCOPED_TRACE(dt);
    auto m = Model::load_source(
        std::string("fn main(x: ") + dt + "[N]) -> " + dt + "[N] {\n  return gelu(x)\n}\n", "gelu.grp");
    const DType t = *parse_dtype(dt);
    const int64_t n = 4803;
    Tensor x(t, {n});
    for (int64_t i = 0; i < n - 2; ++i)
      x.set(i, -12.0 + 24.0 * static_cast<double>(i) / static_cast<double>(n - 3));
    x.set(n - 2, std::numeric_limits<double>::infinity());
    x.set(n - 1, -std::numeric_limits<double>::infinity());
    Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
    Session gpu(m, SessionOptions{"main", "cuda", "eager", 0});
    const Tensor a = cpu.run({{"x", x}}).at(0), b = gpu.run({{"x", x}}).at(0);
    // One unit in the last place of a 16-bit result: 2^-10 (f16) or 2^-7 (bf16) of its binade.
    const double ulp = t == DType::F16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    int worse = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double u = a.get(i), v = b.get(i);
      if (std::isnan(u) || std::isnan(v)) {
        EXPECT_EQ(std::isnan(u), std::isnan(v)) << "x = " << x.get(i);
        continue;
      }
      const double tol = t == DType::F32
                             ? std::max(1e-4 * std::fabs(u), 1e-30)
                             : std::max(ulp * std::exp2(std::floor(std::log2(std::fabs(u) + 1e-300))),
                                        t == DType::F16 ? std::ldexp(1.0, -24) : 1e-38);
      if (!(u == v || std::fabs(u - v) <= tol * 1.0000001) && worse++ < 5)
        ADD_FAILURE() << "x = " << x.get(i) << ": cpu " << u << ", gpu " << v;
    }
    EXPECT_EQ(worse, 0);
  }
}

// One small program per op (and dtype where it matters).
TEST(GpuParity, EveryOp) {
  REQUIRE_GPU();
  const std::vector<std::string> float_exprs = {"-x",
                                                "abs(x)",
                                                "exp(x)",
                                                "log(abs(x) + 1.0)",
                                                "sqrt(abs(x))",
                                                "rsqrt(abs(x) + 1.0)",
                                                "tanh(x)",
                                                "sigmoid(x)",
                                                "relu(x)",
                                                "gelu(x)",
                                                "gelu(x, approximate=\"tanh\")",
                                                "silu(x)",
                                                "sin(x)",
                                                "cos(x)",
                                                "floor(x)",
                                                "ceil(x)",
                                                "round(x)",
                                                "sign(x)",
                                                "x + y",
                                                "x - y",
                                                "x * y",
                                                "x / (abs(y) + 1.0)",
                                                "x % (abs(y) + 1.0)",
                                                "pow(abs(x) + 1.0, y)",
                                                "maximum(x, y)",
                                                "minimum(x, y)",
                                                "where(x > y, x, y)",
                                                "cast(cast(x * 8.0, i32), f32)",
                                                "sum(x, axis=1)",
                                                "mean(x, axis=0)",
                                                "max(x, axis=1, keepdims=true)",
                                                "min(x)",
                                                "prod(x, axis=1)",
                                                "cast(argmax(x, axis=1), f32)",
                                                "cast(argmin(x, axis=0), f32)",
                                                "softmax(x, axis=-1)",
                                                "log_softmax(x, axis=0)",
                                                "layer_norm(x, y[0], y[1], eps=1e-5)",
                                                "rms_norm(x, y[0])",
                                                "x @ transpose(y, 0, 1)",
                                                "linear(x, y, y[0, 0:4])",
                                                "transpose(x, 0, 1) @ y",
                                                "permute(x, (1, 0))",
                                                "reshape(x, (8, 4))",
                                                "expand(x[0:1, :], (4, 8))",
                                                "concat((x, y), axis=0)",
                                                "x[1:3, 2:8:2]",
                                                "cumsum(x, axis=1)",
                                                "take(x, cast(y[0] * 0.0, i32) + 2, axis=1)",
                                                "cast(one_hot(cast(abs(x[0]) * 4.0, i32), 8), f32)",
                                                "where(causal_mask(4, 8, 2), x, y)"};
  for (const char* dt : {"f32", "f16", "bf16"}) {
    for (const auto& e : float_exprs) {
      // Summing to a scalar keeps the program independent of each expression's shape; the sum of
      // squares catches sign errors too.
      std::string src = std::string("fn main(x: ") + dt + "[4, 8], y: " + dt +
                        "[4, 8]) -> (f32[], f32[]) {\n  let r = cast(" + e +
                        ", f32)\n  return (sum(r), sum(r * r))\n}\n";
      SCOPED_TRACE(std::string(dt) + ": " + e);
      std::shared_ptr<Model> m;
      try {
        m = Model::load_source(src, "op.grp");
      } catch (const Error& err) {
        ADD_FAILURE() << err.what();
        continue;
      }
      DType t = *parse_dtype(dt);
      compare(m, "main", {{{"x", sample(t, {4, 8}, 11)}, {"y", sample(t, {4, 8}, 12)}}}, e);
    }
  }
  // Integer and boolean ops, topk, slice writes, dynamic indices.
  const char* int_src = R"(
fn main(a: i32[6], b: i32[6], i: i32[]) -> (i32[6], i32[6], bool[6], i32[3], f32[3], i32[6]) {
  var w = a
  w[i] = 100
  w[0:2] = b[2:4]
  let v, idx = topk(cast(a * 7 + b, f32), 3)
  return (a / (b + 1) + a % (b + 1), maximum(a, b) - abs(b), (a > b) and not (a == 2), idx, v, w)
}
)";
  auto m = Model::load_source(int_src, "int.grp");
  compare(m, "main",
          {{{"a", sample(DType::I32, {6}, 21, 9)},
            {"b", sample(DType::I32, {6}, 22, 9)},
            {"i", Tensor::scalar_i32(-2)}}},
          "integer ops");
}

// topk, both kernels (jit/kernels/topk.cuh for k <= 16, one pass with a list per thread, long
// float rows split over blocks; the k-pass kernel for larger k), on long rows with many ties (values from a
// small set, so the order of equal values by index decides), several rows, integer rows, a fused prologue, a
// row of exactly k elements and one flattened row. Indices and values must equal the CPU's exactly. softmax
// and log_softmax over long rows (the block-per-row kernel: one pass for the maximum and the sum; 1024
// threads for rows of known length from 8192 on), rows with some -inf, only -inf, a NaN and a +inf: the CPU's
// values, NaN where it has NaN.
TEST(GpuParity, LongRowSoftmax) {
  REQUIRE_GPU();
  const char* src = R"(
const C = 50257
fn main(x: f32[R, C], h: f16[R, C], y: f32[R, N]) -> (f32[R, C], f32[R, C], f32[R, C], f32[R, N], f32[R, N]) {
  return (softmax(x, axis=-1), log_softmax(x, axis=-1), log_softmax(cast(h, f32), axis=-1) + 1.0,
          softmax(y, axis=-1), log_softmax(y, axis=-1))
}
)";
  auto m = Model::load_source(src, "long_softmax.grp");
  const float inf = std::numeric_limits<float>::infinity();
  auto rows = [&](int64_t r, int64_t c, DType t, uint32_t seed) {
    Tensor x = sample(t, {r, c}, seed);
    std::mt19937 gen(seed);
    for (int64_t j = 0; j < c; ++j) {
      if (gen() % 3 == 0) x.set(1 * c + j, -inf);  // row 1: a third -inf
      x.set(2 * c + j, -inf);                      // row 2: only -inf
    }
    x.set(3 * c + c / 2, std::numeric_limits<float>::quiet_NaN());  // row 3: one NaN
    x.set(4 * c + c - 1, inf);                                      // row 4: one +inf
    x.set(5 * c + 7, 30.0);                                         // row 5: one dominant element
    return x;
  };
  std::vector<Inputs> calls;
  for (int64_t n : {3000, 9000}) {
    calls.push_back({{"x", rows(6, 50257, DType::F32, 1)},
                     {"h", rows(6, 50257, DType::F16, 2)},
                     {"y", rows(6, n, DType::F32, static_cast<uint32_t>(n))}});
  }
  compare(m, "main", calls, "long softmax rows");
}

// Row normalisations by the warp-per-row kernel (jit/kernels/row_norm.cuh) at BERT's width and a
// width that is not a multiple of 32 (300: the last of a lane's values partly beyond the row), a
// single row, a block's last rows missing (5, 130), 700 rows; softmax rows with -inf, only -inf,
// a NaN; a runtime number of rows in one graph (5, then 130).
TEST(GpuParity, RowNormsOfFewAndManyRows) {
  REQUIRE_GPU();
  const char* src = R"(
weights { g: f16[768]
          b: f16[768]
          g3: f32[300]
          b3: f32[300] }
fn main(x: f32[R, 768], h: f16[R, 768], y: f32[R, 300]) -> (f32[R, 768], f32[R, 768], f16[R, 768], f16[R, 768], f32[R, 300], f32[R, 300]) {
  return (softmax(x, axis=-1), log_softmax(x, axis=-1), layer_norm(h + h, g, b), rms_norm(h, g, eps=1e-5),
          layer_norm(y, g3, b3), softmax(y * 2.0, axis=-1))
}
)";
  auto m = Model::load_source(src, "few_rows.grp");
  m->set_random_weights(31);
  const float inf = std::numeric_limits<float>::infinity();
  auto call = [&](int64_t r, uint32_t seed) {
    Tensor x = sample(DType::F32, {r, 768}, seed);
    if (r >= 4) {
      for (int64_t j = 0; j < 768; j += 3) x.set(1 * 768 + j, -inf);  // row 1: a third -inf
      for (int64_t j = 0; j < 768; ++j) x.set(2 * 768 + j, -inf);     // row 2: only -inf
      x.set(3 * 768 + 500, std::numeric_limits<float>::quiet_NaN());  // row 3: one NaN
    }
    return Inputs{{"x", x},
                  {"h", sample(DType::F16, {r, 768}, seed + 1)},
                  {"y", sample(DType::F32, {r, 300}, seed + 2)}};
  };
  std::vector<Inputs> calls;
  for (int64_t r : {1, 5, 130, 700}) calls.push_back(call(r, static_cast<uint32_t>(r)));
  compare(m, "main", calls, "row norms");
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  Session graph(m, SessionOptions{"main", "cuda", "graph", 0});
  for (int64_t r : {5, 130}) {
    const Inputs in = call(r, 90 + static_cast<uint32_t>(r));
    const auto want = cpu.run(in), got = graph.run(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(want[i], got[i], "row norms graph R " + std::to_string(r) + " out" + std::to_string(i));
  }
}

// The 16-byte copy kernels (jit/emit_kernels.cpp, copy_kernel) against the CPU: takes along a
// leading axis with wrapping and clamped indices, through a slice whose offset is not 16-byte
// aligned (element-by-element fallback at run time), of bf16, i32 and bool rows, and a runtime dim.
TEST(GpuParity, DataMovementCopies) {
  REQUIRE_GPU();
  const char* src = R"(
fn main(x: f16[B, 5, 12, 64], i: i32[5], z: i32[6, 40], m: bool[6, 32], w: bf16[7, 24]) -> (f16[B, 5, 12, 64], f16[B, 5, 12, 56], i32[5, 40], bool[5, 32], bf16[5, 24], f16[B, 3, 12, 64]) {
  return (take(x, i, axis=1), take(x[:, :, :, 3:59], i, axis=1), take(z, i, axis=0), take(m, i, axis=0),
          take(w, i, axis=0), x[:, 1:4, :, :])
}
)";
  auto m = Model::load_source(src, "copies.grp");
  auto idx = [](std::vector<int32_t> v) {
    Tensor t(DType::I32, {5});
    for (size_t k = 0; k < v.size(); ++k) t.set(static_cast<int64_t>(k), v[k]);
    return t;
  };
  Tensor mask(DType::Bool, {6, 32});
  for (int64_t k = 0; k < 6 * 32; k += 3) mask.set(k, 1);
  std::vector<Inputs> calls;
  for (int64_t b : {2, 3})
    calls.push_back({{"x", sample(DType::F16, {b, 5, 12, 64}, static_cast<uint32_t>(b))},
                     {"i", idx({4, 0, -1, 9, 2})},  // -1 wraps to 4, 9 clamps to 4
                     {"z", sample(DType::I32, {6, 40}, 5)},
                     {"m", mask},
                     {"w", sample(DType::BF16, {7, 24}, 6)}});
  compare(m, "main", calls, "data movement copies");
}

TEST(GpuParity, TopK) {
  REQUIRE_GPU();
  const char* src = R"(
fn main(x: f32[R, C], n: i32[C2]) -> (i32[R, 10], f32[R, 10], i32[R, 16], i32[R, 17], i32[7], i32[5], i32[3]) {
  let v10, i10 = topk(x, 10)
  let v16, i16 = topk(x * 2.0 - 1.0, 16)
  let v17, i17 = topk(x, 17)
  let vn, jn = topk(n, 7)
  let vs, js = topk(x[0, 0:5], 5)
  let vr, jr = topk(reshape(x, (R * C)), 3)
  return (i10, v10, i16, i17, jn, js, jr)
}
)";
  auto m = Model::load_source(src, "topk.grp");
  for (int64_t c : {17, 300, 50257}) {
    SCOPED_TRACE("C = " + std::to_string(c));
    for (int64_t r : {1, 3}) {
      // Values in steps of 1/8 over a small range: many exact ties. Two calls of one session:
      // rows split over blocks leave their counters at zero for the next launch.
      std::vector<Inputs> calls;
      std::mt19937 gen(static_cast<uint32_t>(c * 7 + r));
      for (int call = 0; call < 2; ++call) {
        Tensor x(DType::F32, {r, c});
        for (int64_t i = 0; i < r * c; ++i) x.set(i, static_cast<double>(gen() % 64) / 8.0);
        Tensor n(DType::I32, {c + 2});
        for (int64_t i = 0; i < c + 2; ++i) n.set(i, static_cast<double>(static_cast<int>(gen() % 50)) - 25);
        calls.push_back({{"x", x}, {"n", n}});
      }
      compare(m, "main", calls, "topk R=" + std::to_string(r));
    }
  }
}

// The row and slice templates against the CPU on rows of runtime lengths (7 to 3000 elements):
// reductions of every accumulator type, to a scalar and along a leading axis, argmax/argmin with
// ties and a NaN (jit/kernels/reduce.cuh); softmax, log_softmax, layer and RMS norms over rows
// longer than 1024 or of a runtime length, along the last axis and a leading one (row_norm.cuh's
// block kernel); cumsum (scan.cuh); topk with k = 32 (topk.cuh's k passes, ties and a NaN); slice
// writes in place at a dynamic start that wraps and clamps, and as copies (slice_update.cuh).
TEST(GpuParity, RowAndSliceTemplates) {
  REQUIRE_GPU();
  const char* src = R"(
weights { g: f16[2000]
          b: f16[2000] }
state kc: f32[4, 16, 8] = zeros
fn reduce(x: f32[R, N], h: f16[R, N], n: i32[R, N], m: bool[R, N]) -> (f32[R], f16[R, 1], f32[R], f32[N], i32[R], i32[R], bool[R], bool[R], f16[R], f32[], i32[R], i32[R, 1], i32[N]) {
  return (sum(x * 2.0, axis=1), mean(h, axis=1, keepdims=true), max(x, axis=1), min(x, axis=0), sum(n, axis=1),
          max(n, axis=1), all(m, axis=1), any(m, axis=1), prod(h[:, 0:6], axis=1), sum(x), argmax(x, axis=1),
          argmax(h, axis=1, keepdims=true), argmin(n, axis=0))
}
fn norms(x: f32[R, N], w: f16[R, 2000], y: f32[R, 9000]) -> (f32[R, N], f32[R, N], f32[R, N], f32[R, N], f32[R, N], f16[R, 2000], f16[R, 2000], f32[R, 9000]) {
  return (softmax(x, axis=-1), log_softmax(x * 0.5, axis=-1), softmax(x, axis=0), layer_norm(x, x[0], x[1]),
          rms_norm(x, x[2]), layer_norm(w, g, b), rms_norm(w * 2.0, g, eps=1e-5), log_softmax(y, axis=-1) + 1.0)
}
fn scan(x: f32[R, N], n: i32[R, N]) -> (f32[R, N], i32[R, N], f32[R, N]) {
  return (cumsum(x, axis=1), cumsum(n * 3 - 4, axis=1), cumsum(x * 2.0, axis=0))
}
fn topk32(x: f32[R, N], n: i32[R, N]) -> (f32[R, 32], i32[R, 32], i32[R, 32], i32[R, 32]) {
  let v, i = topk(x * 2.0, 32)
  let vn, jn = topk(n, 32)
  return (v, i, vn, jn)
}
fn slices(k: f32[4, 8], pos: i32[], x: f32[R, N]) -> (f32[4, 8], f32[R, N], f32[R, N]) {
  kc[:, pos, :] = k * 2.0
  var y = x
  y[1:3, 0:4] = x[2:4, 0:4] + 1.0
  var z = x * 2.0
  z[pos, :] = z[0, :]
  return (kc[:, 3, :], y, z)
}
)";
  auto m = Model::load_source(src, "row_templates.grp");
  m->set_random_weights(5);
  const int64_t r = 5;
  std::vector<Inputs> reduce, norms, scan, topk, slices;
  uint32_t seed = 40;
  for (int64_t n : {40, 3000}) {
    // Values k/8 in [-1, 1]: many ties. A NaN in row 1 of the longer rows.
    Tensor x = sample(DType::F32, {r, n}, seed++);
    if (n > 40) x.set(1 * n + n / 3, std::numeric_limits<float>::quiet_NaN());
    Tensor h = sample(DType::F16, {r, n}, seed++);
    Tensor in = sample(DType::I32, {r, n}, seed++, 50);
    reduce.push_back({{"x", x}, {"h", h}, {"n", in}, {"m", sample(DType::Bool, {r, n}, seed++)}});
    norms.push_back({{"x", sample(DType::F32, {r, n}, seed++)},
                     {"w", sample(DType::F16, {r, 2000}, seed++)},
                     {"y", sample(DType::F32, {r, 9000}, seed++)}});
    scan.push_back({{"x", sample(DType::F32, {r, n}, seed++)}, {"n", in}});
    topk.push_back({{"x", x}, {"n", in}});
  }
  for (int32_t pos : {3, -2, 20})  // in range, wraps to 14, clamps to 15 (4 for z's rows)
    slices.push_back({{"k", sample(DType::F32, {4, 8}, seed++)},
                      {"pos", Tensor::scalar_i32(pos)},
                      {"x", sample(DType::F32, {r, 300}, seed++)}});
  compare(m, "reduce", reduce, "reductions");
  compare(m, "norms", norms, "long and runtime-length norms");
  compare(m, "scan", scan, "cumsum");
  compare(m, "topk32", topk, "topk k=32");
  compare(m, "slices", slices, "slice writes");
}

// 16-byte copy kernels (jit/emit_kernels.cpp, copy_kernel) at lengths that end inside a block and
// straddle the grid; a slice at column 1 is not 16-byte aligned and takes the element-wise path; a
// take gathers whole rows.
TEST(GpuParity, CopyKernelsOfEveryLengthAndAlignment) {
  REQUIRE_GPU();
  const char* src = R"(
fn copies(x: f16[R, 24], i: i32[K]) -> (f16[R, 16], f16[R, 16], f16[K, 24]) {
  return (x[:, 0:16], x[:, 1:17], take(x, i, axis=0))
}
)";
  auto m = Model::load_source(src, "copies.grp");
  std::vector<Inputs> calls;
  uint32_t seed = 90;
  for (int64_t r : {4, 37, 512, 513, 4100})
    for (int64_t k : {3, 2051})
      calls.push_back(
          {{"x", sample(DType::F16, {r, 24}, seed++)}, {"i", sample(DType::I32, {k}, seed++, r)}});
  compare(m, "copies", calls, "copies");
}

// Norms over few long rows of known length: on an H100 each row takes a thread-block cluster of
// blocks (row_norm.cuh, LaunchRule::cluster_rows: 1 row of 50257 -> 8 blocks, 5 -> 8 each, 40 rows
// of 9000 -> 2 each, 300 rows -> one block each), which combine their statistics through
// distributed shared memory. Against the CPU under both executors, with a -inf run, a row of only
// -inf and a NaN in the rows; beam search's log_softmax of f16 logits plus a score.
TEST(GpuParity, LongRowNormsOverClustersOfBlocks) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
fn beam(logits: f16[R, 50257], s: f32[R]) -> f32[R, 50257] {
  return log_softmax(cast(logits, f32), axis=-1) + reshape(s, (R, 1))
}
fn norms(y: f32[R, 9000], g: f32[9000]) -> (f32[R, 9000], f32[R, 9000], f32[R, 9000], f32[R, 9000]) {
  return (softmax(y, axis=-1), log_softmax(y * 3.0, axis=-1), layer_norm(y, g, g * 0.5), rms_norm(y, g))
}
)",
                              "cluster_rows.grp");
  const float inf = std::numeric_limits<float>::infinity();
  uint32_t seed = 120;
  std::vector<Inputs> beam, norms;
  for (int64_t r : {1, 5})
    beam.push_back(
        {{"logits", sample(DType::F16, {r, 50257}, seed++)}, {"s", sample(DType::F32, {r}, seed++)}});
  for (int64_t r : {1, 40, 300}) {
    Tensor y = sample(DType::F32, {r, 9000}, seed++);
    if (r == 40) {
      for (int64_t j = 0; j < 5000; ++j) y.set(3 * 9000 + j, -inf);  // row 3: -inf over several blocks' spans
      for (int64_t j = 0; j < 9000; ++j) y.set(4 * 9000 + j, -inf);  // row 4: only -inf (NaN out, as the CPU)
      y.set(7 * 9000 + 8999, std::numeric_limits<float>::quiet_NaN());
    }
    norms.push_back({{"y", y}, {"g", sample(DType::F32, {9000}, seed++)}});
  }
  for (const char* executor : {"eager", "graph"}) {
    Session cpu_b(m, SessionOptions{"beam", "cpu", "auto", 0}),
        gpu_b(m, SessionOptions{"beam", "cuda", executor, 0});
    for (size_t c = 0; c < beam.size(); ++c)
      expect_close(cpu_b.run(beam[c])[0], gpu_b.run(beam[c])[0],
                   std::string(executor) + " beam call " + std::to_string(c));
    Session cpu_n(m, SessionOptions{"norms", "cpu", "auto", 0}),
        gpu_n(m, SessionOptions{"norms", "cuda", executor, 0});
    for (size_t c = 0; c < norms.size(); ++c) {
      auto a = cpu_n.run(norms[c]), b = gpu_n.run(norms[c]);
      ASSERT_EQ(a.size(), b.size());
      for (size_t i = 0; i < a.size(); ++i)
        expect_close(a[i], b[i],
                     std::string(executor) + " norms call " + std::to_string(c) + " out" + std::to_string(i));
    }
  }
}

// Reductions and arg-reductions over rows of known length from 8192 on (blocks of 1024 threads,
// jit/emit_kernels.cpp wide_reduction; generate's argmax over 50257 logits): many ties (values
// k/8), a NaN in one row, f16 and integer rows, against the CPU.
TEST(GpuParity, LongKnownRowReductions) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
fn main(x: f32[R, 9000], h: f16[R, 50257], n: i32[R, 9000], b: bool[R, 9000]) -> (f32[R], f32[R], i32[R], i32[R], i32[R], i32[R], bool[R], bool[R], f16[R]) {
  return (sum(x * 2.0, axis=1), max(x, axis=1), argmax(h, axis=1), argmin(x, axis=1), argmax(n, axis=-1),
          sum(n, axis=1), all(b, axis=1), any(b, axis=1), mean(h, axis=1))
}
)",
                              "long_rows.grp");
  std::vector<Inputs> calls;
  uint32_t seed = 90;
  for (int64_t r : {1, 5}) {
    Tensor x = sample(DType::F32, {r, 9000}, seed++);
    if (r > 1) x.set(9000 + 4321, std::numeric_limits<float>::quiet_NaN());
    calls.push_back({{"x", x},
                     {"h", sample(DType::F16, {r, 50257}, seed++)},
                     {"n", sample(DType::I32, {r, 9000}, seed++, 50)},
                     {"b", sample(DType::Bool, {r, 9000}, seed++)}});
  }
  compare(m, "main", calls, "reductions of long known rows");
}

// Every path of the matrix-product templates (jit/kernels/gemv.cuh, gemv_mma.cuh, gemm_mma.cuh) against the
// CPU: both weight layouts, f16 and bf16, GEMV (rows <= 16: one K range, K splits, ragged columns and K),
// both tensor-core tile configurations (and ragged tiles), fused row prologues and epilogues, A read directly
// and A computed in the kernel.
struct MatrixCase {
  const char* what;
  const char* dtype;
  const char* expr;  // of x [M, K] (or [2, M/2, K]), w [K, N], wt [N, K], b [N], g/gb [K], r [M, N]
  int64_t m, k, n;
  bool three_d = false;
};

class GpuMatrixProduct : public testing::TestWithParam<MatrixCase> {};

TEST_P(GpuMatrixProduct, MatchesCpu) {
  REQUIRE_GPU();
  const MatrixCase& c = GetParam();
  std::string t = c.dtype;
  std::string xs =
      c.three_d ? t + "[2, M, " + std::to_string(c.k) + "]" : t + "[M, " + std::to_string(c.k) + "]";
  std::string rs =
      c.three_d ? t + "[2, M, " + std::to_string(c.n) + "]" : t + "[M, " + std::to_string(c.n) + "]";
  std::string src = "weights {\n  w: " + t + "[" + std::to_string(c.k) + ", " + std::to_string(c.n) +
                    "]\n  wt: " + t + "[" + std::to_string(c.n) + ", " + std::to_string(c.k) +
                    "]\n  b: " + t + "[" + std::to_string(c.n) + "]\n  g: " + t + "[" + std::to_string(c.k) +
                    "]\n  gb: " + t + "[" + std::to_string(c.k) + "]\n}\nfn main(x: " + xs + ", r: " + rs +
                    ") -> " + rs + " {\n  return " + c.expr + "\n}\n";
  SCOPED_TRACE(src);
  auto m = Model::load_source(src, "matrix.grp");
  m->set_random_weights(9);
  DType dt = *parse_dtype(c.dtype);
  int64_t rows = c.three_d ? c.m / 2 : c.m;
  Shape xshape = c.three_d ? Shape{2, rows, c.k} : Shape{rows, c.k};
  Shape rshape = c.three_d ? Shape{2, rows, c.n} : Shape{rows, c.n};
  compare(m, "main", {{{"x", sample(dt, xshape, 31)}, {"r", sample(dt, rshape, 32)}}}, c.what);
}

const MatrixCase kMatrixCases[] = {
    {"gemv kn M=1", "f16", "x @ w + b", 1, 768, 768},
    {"gemv kn M=5 split-K", "f16", "x @ w + b + r", 5, 3072, 768},
    {"gemv kn M=16 layer_norm prologue gelu", "f16", "gelu(layer_norm(x, g, gb) @ w + b)", 16, 768, 2304},
    {"gemv kn ragged N", "f16", "x @ w", 7, 200, 100},
    {"gemv kn ragged K", "bf16", "x @ w + r", 3, 70, 64},
    {"gemv kn 3-D rows", "f16", "x @ w + r", 10, 256, 512, true},
    // gemv_mma.cuh (16-bit [K][N] weights, N % 8 == 0): a last tile of 8 of 64 columns, 9 rows
    // (a second pass of one row), K ragged in its last slab; K splits over 4000 with the fused
    // norm; N % 8 != 0 keeps gemv.cuh's FMA loop (the ragged-N case above).
    {"gemv kn mma ragged tile and rows", "bf16", "x @ w + r", 9, 520, 200},
    {"gemv kn mma K splits layer_norm prologue", "f16", "layer_norm(x, g, gb) @ w + b", 4, 4000, 1024},
    {"gemv nk M=5 (lm_head)", "f16", "linear(layer_norm(x, g, gb), wt)", 5, 768, 5000},
    {"gemv nk split-K bias", "bf16", "linear(x, wt, b) + r", 4, 2048, 384},
    {"gemv nk ragged K", "f16", "linear(x, wt, b)", 2, 70, 33},
    {"mma M=17 small tiles", "f16", "x @ w + b", 17, 256, 256},
    {"mma M=65 linear A direct", "f16", "gelu(linear(x, wt, b))", 65, 768, 768},
    {"mma M=128 layer_norm prologue", "bf16", "layer_norm(x, g, gb) @ w + r", 128, 768, 2304},
    {"mma ragged M N K", "f16", "linear(x, wt, b) + r", 100, 72, 100},
    {"mma ragged K not 8-aligned", "f16", "x @ w", 40, 70, 64},
    {"mma M=4096 large tiles", "f16", "x @ w + b", 4096, 256, 1024},
    {"mma M=4096 linear large tiles", "bf16", "linear(x, wt, b) + r", 4096, 512, 768},
    // 128 x 128 tiles (scheduler::launch_dims: wide when they fill half the GPU's multiprocessors).
    {"wide ragged M N K", "f16", "x @ w + b", 2000, 72, 1000},
    {"wide layer_norm prologue", "bf16", "layer_norm(x, g, gb) @ w + r", 2048, 768, 1024},
    // A through views (a row permutation of x): 16-byte copies where contiguous (kAView).
    {"mma view A", "f16", "transpose(linear(transpose(x, 0, 1), wt, b), 0, 1) + r", 256, 512, 384, true},
    {"wide view A", "bf16", "transpose(linear(transpose(x, 0, 1), wt), 0, 1)", 4096, 256, 1024, true},
    {"gemv view A", "f16", "transpose(linear(transpose(x, 0, 1), wt, b), 0, 1)", 8, 512, 384, true},
    // Wide tiles of K-major operands: warpgroup MMA on Hopper (gemm_wgmma.cuh), else mma.sync.
    {"wgmma linear bias residual", "f16", "linear(x, wt, b) + r", 2048, 768, 768},
    {"wgmma ragged M N K gelu", "bf16", "gelu(linear(x, wt, b))", 2000, 520, 1000},
    {"wgmma K not 8-aligned: mma.sync", "f16", "linear(x, wt) + r", 2048, 100, 1024},
    {"wgmma view A", "f16", "transpose(linear(transpose(x, 0, 1), wt, b), 0, 1)", 8192, 256, 512, true},
    // Too few 128 x 128 tiles: 128 x 64 wgmma tiles on Hopper (LaunchDims::narrow).
    {"wgmma64 BERT b=1 shape", "f16", "linear(x, wt, b) + r", 128, 768, 768},
    {"wgmma64 ragged M N K gelu", "bf16", "gelu(linear(x, wt, b))", 100, 200, 72},
    {"wgmma64 view A", "f16", "transpose(linear(transpose(x, 0, 1), wt, b), 0, 1)", 256, 384, 200, true},
    // Views through reshapes with a runtime row dim: address = row part + k part (kAViewSplit,
    // each row's part once per tile; 128 x 96 and 128 x 64 wgmma tiles on an H100), and one
    // the shapes cannot show separable (the mma.sync tiles, every address computed).
    {"wgmma view A split heads", "f16",
     "transpose(linear(reshape(transpose(reshape(x, (2, M, 12, 64)), 0, 1), (M, 2, 768)), wt, b), 0, 1) + r",
     2000, 768, 768, true},
    {"wgmma64 view A split heads", "bf16",
     "transpose(linear(reshape(transpose(reshape(x, (2, M, 12, 64)), 0, 1), (M, 2, 768)), wt), 0, 1)", 200,
     768, 768, true},
    {"mma view A heads-major (not separable)", "f16",
     "linear(reshape(transpose(reshape(x, (2, 12, M, 64)), 1, 2), (2, M, 768)), wt, b) + r", 2000, 768, 768,
     true},
    // At least kGemvTensorCoreMinColumns columns: 16 x 128 tensor-core tiles with A staged whole,
    // kGemvTcBlocksPerSm blocks per SM (GPT-2's lm_head; ragged rows, columns and K; K past
    // kGemvTcMaxKChunk in two splits; a whole tile of 16 rows over a [K][N] weight).
    {"gemv tc M=5 (lm_head) layer_norm prologue", "f16", "linear(layer_norm(x, g, gb), wt)", 5, 768, 50257},
    {"gemv tc ragged M N K bias residual", "bf16", "linear(x, wt, b) + r", 13, 200, 33000},
    {"gemv tc K split layer_norm prologue", "bf16", "linear(layer_norm(x, g, gb), wt, b)", 7, 1100, 32800},
    {"gemv tc M=16 kn gelu", "f16", "gelu(x @ w + b)", 16, 96, 32768},
};

INSTANTIATE_TEST_SUITE_P(Paths, GpuMatrixProduct, testing::ValuesIn(kMatrixCases),
                         [](const testing::TestParamInfo<MatrixCase>& i) {
                           return "case" + std::to_string(i.index);
                         });

// Sibling products (scheduler/fusion.h): three linears of one A, each with its own weight and
// epilogue (bias; GELU without bias; bias and a residual), computed by one kernel over their
// 64 + 200 + 96 columns, so tiles straddle the parts. Every path by row count: GEMV (1, 5, 16),
// 16-row tensor-core tiles (17), 64 x 64 mma (65), 128 x 64 wgmma on Hopper (128), 128 x 128 tiles
// (2048), K not a multiple of 8 (scalar weight loads, mma.sync); eager and graph.
TEST(GpuParity, SiblingProductsEveryPath) {
  REQUIRE_GPU();
  for (int64_t k : {768, 70}) {
    const std::string K = std::to_string(k);
    const std::string src = "weights {\n  wq: f16[64, " + K + "]\n  bq: f16[64]\n  wk: f16[200, " + K +
                            "]\n  wv: f16[96, " + K + "]\n  bv: f16[96]\n}\nfn main(x: f16[M, " + K +
                            "], r: f16[M, 96]) -> (f16[M, 64], f16[M, 200], f16[M, 96]) {\n"
                            "  return (linear(x, wq, bq), gelu(linear(x, wk)), linear(x, wv, bv) + r)\n}\n";
    auto m = Model::load_source(src, "siblings.grp");
    m->set_random_weights(17);
    for (int64_t rows : {1, 5, 16, 17, 65, 128, 2048}) {
      const Inputs in = {{"x", sample(DType::F16, {rows, k}, 41)}, {"r", sample(DType::F16, {rows, 96}, 42)}};
      Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
      const auto want = cpu.run(in);
      for (const char* executor : {"eager", "graph"}) {
        Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
        const auto got = gpu.run(in);
        ASSERT_EQ(got.size(), want.size());
        for (size_t i = 0; i < got.size(); ++i)
          expect_close(want[i], got[i],
                       "siblings K " + K + " rows " + std::to_string(rows) + " " + executor + " out" +
                           std::to_string(i));
      }
    }
  }
}

// Sibling products of 96 + 32 + 64 columns, so one 64- or 128-wide tile holds columns of two
// parts; K = 200 (the last 64-wide k step runs past the end); one session whose row count changes
// from call to call (GEMV, 128 x 64 and 128 x 128 tiles), eager and graph. (Written for the TMA
// loads tried in run 110, which loaded each part's weight rows from its own tensor map.)
TEST(GpuParity, SiblingTilesAcrossPartsAndRowCounts) {
  REQUIRE_GPU();
  const std::string src =
      "weights {\n  wq: f16[96, 200]\n  bq: f16[96]\n  wk: f16[32, 200]\n  wv: f16[64, 200]\n}\n"
      "fn main(x: f16[M, 200], r: f16[M, 64]) -> (f16[M, 96], f16[M, 32], f16[M, 64]) {\n"
      "  return (linear(x, wq, bq), gelu(linear(x, wk)), linear(x, wv) + r)\n}\n";
  auto m = Model::load_source(src, "siblings_rows.grp");
  m->set_random_weights(23);
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  for (const char* executor : {"eager", "graph"}) {
    Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
    for (int64_t rows : {128, 300, 2048, 1, 128}) {
      const Inputs in = {{"x", sample(DType::F16, {rows, 200}, 51 + static_cast<uint32_t>(rows))},
                         {"r", sample(DType::F16, {rows, 64}, 52)}};
      const auto want = cpu.run(in);
      const auto got = gpu.run(in);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        expect_close(want[i], got[i],
                     std::string(executor) + " rows " + std::to_string(rows) + " out" + std::to_string(i));
    }
  }
}

// An attention that stores through the merge of the heads (scheduler/fusion.h): the output
// projection reads the merged heads as a plain buffer. Decode (attention.cuh, one query row) and
// many query rows (attention_mma.cuh, 64-row tiles with a ragged last one); eager and graph.
TEST(GpuParity, AttentionStoredThroughTheMergeOfHeads) {
  REQUIRE_GPU();
  auto m = Model::load_source(R"(
weights { w: f16[96, 96] }
fn main(q: f16[B, 3, S, 32], k: f16[B, 3, T, 32], v: f16[B, 3, T, 32]) -> f16[B, S, 96] {
  let o = softmax((q @ transpose(k, 2, 3)) * 0.17, axis=-1) @ v
  return linear(reshape(transpose(o, 1, 2), (B, S, 96)), w)
}
)",
                              "merge.grp");
  m->set_random_weights(23);
  for (int64_t s : {1, 70}) {
    const Inputs in = {{"q", sample(DType::F16, {2, 3, s, 32}, 51)},
                       {"k", sample(DType::F16, {2, 3, 45, 32}, 52)},
                       {"v", sample(DType::F16, {2, 3, 45, 32}, 53)}};
    Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
    const auto want = cpu.run(in);
    for (const char* executor : {"eager", "graph"}) {
      Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
      const auto got = gpu.run(in);
      ASSERT_EQ(got.size(), 1u);
      expect_close(want[0], got[0], "merged heads S " + std::to_string(s) + " " + executor);
    }
  }
}

// Fused attention (jit/kernels/attention.cuh) against the unfused CPU ops: decode (one query row,
// a position mask), encoder (a broadcast padding mask), causal prefill, keys too many to cache,
// head widths that are not multiples of 32 or differ between k and v, a k shared across the batch,
// every float dtype, and an epilogue after p @ v.
struct AttentionCase {
  const char* what;
  const char* dtype;
  int64_t b, h, s, kv, dk, dv;
  const char* mask;       // bool[MS0, MS1] expression over S, KV (or "" for none)
  bool shared_k = false;  // k and v are [h, kv, d], broadcast over the batch
  // The output scaled by 2 after p @ v (an epilogue: stored element by element); without it the
  // tensor-core kernel writes its rows through shared memory in 16-byte pieces (Ops::kOutAt).
  bool epilogue = true;
};

class GpuAttention : public testing::TestWithParam<AttentionCase> {};

TEST_P(GpuAttention, MatchesCpu) {
  REQUIRE_GPU();
  const AttentionCase& c = GetParam();
  const std::string t = c.dtype, n = std::to_string(c.b), h = std::to_string(c.h);
  auto shp = [&](int64_t rows, int64_t cols, bool batch) {
    return t + "[" + (batch ? n + ", " : "") + h + ", " + std::to_string(rows) + ", " + std::to_string(cols) +
           "]";
  };
  std::string scores = c.shared_k ? "(q @ transpose(k, 1, 2)) * 0.125" : "(q @ transpose(k, 2, 3)) * 0.125";
  if (*c.mask) scores = "where(" + std::string(c.mask) + ", " + scores + ", -10000.0)";
  std::string src = "fn main(q: " + shp(c.s, c.dk, true) + ", k: " + shp(c.kv, c.dk, !c.shared_k) +
                    ", v: " + shp(c.kv, c.dv, !c.shared_k) + ", pos: i32[]) -> " + shp(c.s, c.dv, true) +
                    " {\n  return (softmax(" + scores + ", axis=-1) @ v)" + (c.epilogue ? " * 2.0" : "") +
                    "\n}\n";
  SCOPED_TRACE(src);
  auto m = Model::load_source(src, "attention.grp");
  DType dt = *parse_dtype(c.dtype);
  Shape qs{c.b, c.h, c.s, c.dk}, ks{c.b, c.h, c.kv, c.dk}, vs{c.b, c.h, c.kv, c.dv};
  if (c.shared_k) {
    ks.erase(ks.begin());
    vs.erase(vs.begin());
  }
  Tensor pos(DType::I32, {});
  pos.set_int(0, c.kv / 2);
  compare(m, "main",
          {{{"q", sample(dt, qs, 41)}, {"k", sample(dt, ks, 42)}, {"v", sample(dt, vs, 43)}, {"pos", pos}}},
          c.what);
}

const AttentionCase kAttentionCases[] = {
    {"decode position mask", "f16", 5, 12, 1, 256, 64, 64, "reshape(arange(256, i32) <= pos, (1, 256))"},
    {"decode ragged keys bf16", "bf16", 2, 3, 1, 70, 64, 64, "reshape(arange(70, i32) <= pos, (1, 70))"},
    {"two query rows", "f16", 1, 2, 2, 33, 32, 32, ""},
    {"encoder 20 rows", "bf16", 2, 3, 20, 20, 40, 40, "reshape(arange(20, i32) < 17, (1, 20))"},
    {"causal prefill f32", "f32", 1, 2, 33, 33, 16, 16, "causal_mask(33, 33, 0)"},
    {"keys beyond the score cache", "f16", 1, 2, 9, 2000, 64, 64, ""},
    {"dv differs from dk", "f16", 2, 2, 5, 50, 32, 96, ""},
    {"head width 256", "f16", 1, 2, 3, 40, 256, 256, ""},
    {"k shared across the batch", "f16", 3, 2, 4, 24, 16, 16, "", true},
    // More than 16 query rows: the tensor-core kernel (attention_mma.cuh).
    {"prefill BERT-like padding mask", "f16", 2, 12, 128, 128, 64, 64,
     "reshape(arange(128, i32) < 100, (1, 128))"},
    {"prefill causal ragged bf16", "bf16", 1, 3, 77, 77, 64, 64, "causal_mask(77, 77, 0)"},
    {"prefill ragged widths dk 40 dv 24", "f16", 2, 2, 33, 150, 40, 24, ""},
    {"prefill head 128, two row tiles", "f16", 1, 2, 200, 300, 128, 128,
     "reshape(arange(300, i32) <= pos, (1, 300))"},
    {"prefill k shared across the batch", "bf16", 3, 2, 40, 24, 16, 16, "", true},
    {"prefill every key masked in some rows", "f16", 1, 2, 64, 64, 32, 32, "causal_mask(64, 64, -8)"},
    // Ten key tiles: the online softmax rescales the output and the sum as the maximum grows.
    {"prefill 600 keys, ten key tiles", "f16", 1, 2, 70, 600, 64, 64,
     "reshape(arange(600, i32) <= pos, (1, 600))"},
    // No epilogue: rows staged in shared memory and stored in 16-byte pieces; rows of 24 elements
    // (48 bytes) are aligned only every other row, so some pieces go element by element; a dv
    // wider than dk stores element by element through Ops::out_at.
    {"prefill BERT-like, rows stored in 16-byte pieces", "f16", 2, 12, 128, 128, 64, 64,
     "reshape(arange(128, i32) < 100, (1, 128))", false, false},
    {"prefill rows of 24, pieces unaligned", "f16", 2, 2, 33, 150, 40, 24, "", false, false},
    {"prefill dv 96 wider than dk 32, no epilogue", "f16", 1, 2, 40, 70, 32, 96, "", false, false},
    {"prefill head 128, 600 keys, no epilogue", "bf16", 1, 2, 200, 600, 128, 128,
     "reshape(arange(600, i32) <= pos, (1, 600))", false, false},
};

INSTANTIATE_TEST_SUITE_P(Shapes, GpuAttention, testing::ValuesIn(kAttentionCases),
                         [](const testing::TestParamInfo<AttentionCase>& i) {
                           return "case" + std::to_string(i.index);
                         });

}  // namespace
}  // namespace grape
