// Matrix products (matmul, linear): the glue of the templates jit/kernels/gemv.cuh and
// gemm_mma.cuh for f16/bf16 weights, and the general kernel for every other product (f32,
// integers, batched products): WMMA/SIMT tiles and a simple GEMV, built here as text.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "jit/emit_context.h"
#include "jit/kernel_source.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"

namespace grape::jit::detail {

using ir::Op;
using ir::ValueId;

namespace {

// The statements of a row prologue's statistics (runtime/cpu/norm.cpp) over k < K, computed by one
// warp (every lane gets them): s0/s1 are (max, sum of exp) for softmax, (mean, 1/std) for the
// norms. `gx` is the call reading the prologue's input at k ("gx(p, r, k)"). When K is a constant
// of at most kRowStatsRegs * 32, each lane loads its elements once into registers (one memory
// round trip for both statistics instead of one per pass).
constexpr int64_t kRowStatsRegs = 32;
std::string row_stats_code(const ir::Operation& rp, const std::string& gx, const std::string& ind,
                           const ir::Dim& k_dim) {
  std::string st = ind + "const int lane = threadIdx.x & 31;\n";
  const bool softmax = rp.op == Op::Softmax || rp.op == Op::LogSoftmax;
  char eps[64];
  std::snprintf(eps, sizeof eps, "%.9gf", rp.attrs.eps);
  const std::string finish_norm = ind + "sq = grape_warp_sum(sq);\n" + ind + "*s0 = mean;\n" + ind +
                                  "*s1 = 1.0f / sqrtf(sq / (float)K + " + std::string(eps) + ");\n";
  if (k_dim.is_const() && k_dim.const_value() <= kRowStatsRegs * 32) {
    const std::string n = std::to_string((k_dim.const_value() + 31) / 32);
    auto each = [&](const std::string& stmt) {
      return "#pragma unroll\n" + ind + "for (int t = 0; t < " + n + "; ++t) if (lane + 32 * t < K) " + stmt +
             "\n";
    };
    st += ind + "float xr[" + n + "];\n#pragma unroll\n" + ind + "for (int t = 0; t < " + n + "; ++t) {\n" +
          ind + "  const long long k = lane + 32 * t;\n" + ind + "  xr[t] = k < K ? " + gx + " : 0.0f;\n" +
          ind + "}\n";
    if (softmax) {
      st += ind + "float mx = -__int_as_float(0x7f800000);\n" + each("mx = grape_fmax_nan(mx, xr[t]);");
      st +=
          ind + "mx = grape_warp_max_nan(mx);\n" + ind + "float s = 0.0f;\n" + each("s += expf(xr[t] - mx);");
      st += ind + "*s0 = mx;\n" + ind + "*s1 = grape_warp_sum(s);\n";
    } else {
      st += ind + "float mean = 0.0f;\n";
      if (rp.op == Op::LayerNorm)
        st += each("mean += xr[t];") + ind + "mean = grape_warp_sum(mean) / (float)K;\n";
      st += ind + "float sq = 0.0f;\n" + each("{ const float d = xr[t] - mean; sq += d * d; }") + finish_norm;
    }
    return st;
  }
  const std::string loop = "#pragma unroll 8\n" + ind + "for (long long k = lane; k < K; k += 32) ";
  if (softmax) {
    st += ind + "float mx = -__int_as_float(0x7f800000);\n" + loop + "mx = grape_fmax_nan(mx, " + gx + ");\n";
    st += ind + "mx = grape_warp_max_nan(mx);\n" + ind + "float s = 0.0f;\n" + loop + "s += expf(" + gx +
          " - mx);\n";
    st += ind + "*s0 = mx;\n" + ind + "*s1 = grape_warp_sum(s);\n";
  } else {
    st += ind + "float mean = 0.0f;\n";
    if (rp.op == Op::LayerNorm)
      st += loop + "mean += " + gx + ";\n" + ind + "mean = grape_warp_sum(mean) / (float)K;\n";
    st += ind + "float sq = 0.0f;\n" + loop + "{ const float d = " + gx + " - mean; sq += d * d; }\n" +
          finish_norm;
  }
  return st;
}

// ---- matrix products through the templates (jit/kernels/gemv.cuh, gemm_mma.cuh) -------------
// Taken when W (operand b) is a materialised 2-D f16/bf16 buffer and A has the same dtype: the
// rows of A (every axis but the last) are folded into R, so a batch of decode tokens reads each
// weight once. The glue is an Ops struct (loads of A with the fused row prologue, the epilogue
// store) and the instantiation; everything else is in the templates.
// Whether v is a weight of the program: read-only for the whole session (state is not).
bool is_weight(const ir::Function& f, ValueId v) {
  bool found = false;
  ir::for_each_op(f.body, [&](const ir::Operation& op) {
    if (op.op == Op::Weight && !op.results.empty() && op.results[0] == v) found = true;
  });
  return found;
}

static_assert(scheduler::kMaxSiblingBuffers <= static_cast<size_t>(kMaxBuffers),
              "a kernel of sibling products must fit the parameter block");

bool template_matmul_applies(Ctx& c, const ir::Operation& op) {
  ValueId a = op.operands[0], b = op.operands[1], out = op.results[0];
  DType dt = c.type(out).dtype;
  if (dt != DType::F16 && dt != DType::BF16) return false;
  if (c.type(a).dtype != dt || c.type(b).dtype != dt || c.type(b).rank() != 2 || c.type(a).rank() < 1)
    return false;
  return c.buf.count(b) && !c.prod.count(b);
}

std::string template_matmul(Ctx& c, const std::string& name, LaunchRule& L) {
  // A matrix-product group reads nothing it writes: its only in-place ops are folded updates
  // (scheduler/fusion.h), which never read the memory they update.
  c.readonly_inputs = true;
  const ir::Operation& op = *c.g.core;
  const bool linear = op.op == Op::Linear;
  const ir::Operation* rp = c.g.row_prologue;
  ValueId a = op.operands[0], b = op.operands[1], out = op.results[0];
  ValueId ax = rp ? rp->operands[0] : a;
  DType dt = c.type(out).dtype;
  const auto& as = c.type(a).shape;
  std::vector<ir::Dim> lead(as.begin(), as.end() - 1);
  ir::Dim k_dim = as.back();
  ir::Dim n_dim = linear ? c.type(b).shape[0] : c.type(b).shape[1];
  // Sibling products (FusionGroup::parts, all linear): their output columns one after another,
  // each part's [N_i, K] weight its own buffer.
  const auto& parts = c.g.parts;
  std::vector<int64_t> part_cols;
  if (!parts.empty()) {
    int64_t total = 0;
    for (const auto& part : parts) {
      part_cols.push_back(c.type(part.core->operands[1]).shape[0].const_value());
      total += part_cols.back();
    }
    n_dim = total;
  }
  ir::Dim rows = 1;
  for (const auto& d : lead) rows = rows * d;
  // A runtime row count is an extra[] slot, not a product of shape entries: `B * T` in a prefill,
  // `B` in a decode step and `5 * T` in a beam are then one source (the same machine code),
  // compiled once. A constant stays a literal: the template may specialise on it.
  // A runtime one may also be a literal: GRAPE_ROWS_OR is it in a row-count variant (kRowsDefine).
  const std::string R = rows.is_const() ? c.dim(rows) : "GRAPE_ROWS_OR(" + c.extra_dim(rows) + ")";
  const std::string N = c.dim(n_dim), K = c.dim(k_dim);
  const std::string T = storage_type(dt);
  const bool a_direct = !rp && c.buf.count(a) && !c.prod.count(a);
  bool wgmma = false;  // gemm_wgmma.cuh applies; set with A's staging below

  // A (or the row prologue's input) at flat row r, column k: when it is a buffer of shape
  // lead + [K], its offset is r * K + k (the hint spares the unravel's divisions).
  auto a_at = [&](ValueId v, std::string& code) {
    Idx idx = c.unravel("r", lead, code, "    ");
    idx.push_back("k");
    std::vector<ir::Dim> dims = lead;
    dims.push_back(k_dim);
    c.flat_hints.push_back({dims, idx, "(r * " + K + " + k)"});
    std::string x = c.value(v, idx, code, "    ");
    c.flat_hints.pop_back();
    return std::make_pair(x, idx);
  };

  std::string ops = "struct Ops {\n";
  ops += "  typedef " + T + " W;\n  typedef " + T + " T;\n";
  ops += std::string("  static constexpr bool kRowStats = ") + (rp ? "true" : "false") + ";\n";
  ops += std::string("  static constexpr bool kWKN = ") + (linear ? "false" : "true") + ";\n";
  ops += std::string("  static constexpr bool kADirect = ") + (a_direct ? "true" : "false") + ";\n";
  ops += "  __device__ static long long R(const KParams* p) { return " + R + "; }\n";
  ops += "  __device__ static long long N(const KParams* p) { return " + N + "; }\n";
  ops += "  __device__ static long long K(const KParams* p) { return " + K + "; }\n";
  ops += "  __device__ static const W* w(const KParams* p) { return (const W*)p->buf[" +
         std::to_string(c.buf.at(b)) + "]; }\n";
  // Row n of an [N, K] weight (linear): where the sibling products' columns meet, the next part's.
  std::string w_row = "  __device__ static const W* w_row(const KParams* p, long long n) {\n";
  if (parts.empty()) {
    w_row += "    return w(p) + n * K(p);\n";
  } else {
    int64_t off = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string at = "(const W*)p->buf[" + std::to_string(c.buf.at(parts[i].core->operands[1])) +
                             "] + (n - " + std::to_string(off) + "LL) * K(p)";
      off += part_cols[i];
      w_row += i + 1 < parts.size() ? "    if (n < " + std::to_string(off) + "LL) return " + at + ";\n"
                                    : "    return " + at + ";\n";
    }
  }
  ops += w_row + "  }\n";
  ops += "  __device__ static const T* a_ptr(const KParams* p) { return " +
         (a_direct ? "(const T*)p->buf[" + std::to_string(c.buf.at(a)) + "]" : std::string("nullptr")) +
         "; }\n";
  if (rp) {
    std::string code;
    std::string x = a_at(ax, code).first;
    ops += "  __device__ static float gx(const KParams* p, long long r, long long k) {\n" + code +
           "    return " + x + ";\n  }\n";
    ops +=
        "  __device__ static void row_stats(const KParams* p, long long r, long long K, float* s0, float* "
        "s1) {\n" +
        row_stats_code(*rp, "gx(p, r, k)", "    ", k_dim) + "  }\n";
    std::string code2;
    auto [xv, idx] = a_at(ax, code2);
    std::string res;
    switch (rp->op) {
      case Op::Softmax: res = "expf(" + xv + " - s0) / s1"; break;
      case Op::LogSoftmax: res = "(" + xv + " - s0) - logf(s1)"; break;
      case Op::LayerNorm:
      case Op::RmsNorm: {
        res = "(" + xv + " - s0) * s1 * " + c.value(rp->operands[1], {"k"}, code2, "    ");
        if (rp->op == Op::LayerNorm) res += " + " + c.value(rp->operands[2], {"k"}, code2, "    ");
        break;
      }
      default: throw std::logic_error("bad row prologue");
    }
    ops += "  __device__ static float a(const KParams* p, long long r, long long k, float s0, float s1) {\n" +
           code2 + "    return " + round_to(c.type(a).dtype, "(" + res + ")") + ";\n  }\n";
  } else {
    std::string code;
    std::string x = a_at(a, code).first;
    ops += "  __device__ static float a(const KParams* p, long long r, long long k, float, float) {\n" +
           code + "    return " + x + ";\n  }\n";
    ops += "  __device__ static void row_stats(const KParams*, long long, long long, float*, float*) {}\n";
  }
  // Eight consecutive k of A at once (16-byte loads), for staging A in gemv.cuh: when A is a
  // buffer, or a row normalisation of a buffer with buffers for its scale and shift. The kernel
  // checks the alignment (a_vec_ok) and K % 8 before it takes this path.
  {
    auto direct = [&](ValueId v) { return c.buf.count(v) && !c.prod.count(v); };
    auto ptr = [&](ValueId v) { return "(const T*)p->buf[" + std::to_string(c.buf.at(v)) + "]"; };
    const bool norm = rp && (rp->op == Op::LayerNorm || rp->op == Op::RmsNorm);
    bool vec = a_direct;
    std::vector<ValueId> srcs;
    if (a_direct) srcs = {a};
    if (norm && direct(ax) && c.type(ax).dtype == dt) {
      vec = true;
      srcs = {ax};
      for (size_t i = 1; i < rp->operands.size() && i <= (rp->op == Op::LayerNorm ? 2u : 1u); ++i) {
        ValueId o = rp->operands[i];
        vec = vec && direct(o) && c.type(o).dtype == dt && c.type(o).rank() == 1;
        srcs.push_back(o);
      }
    }
    // A seen through views of a buffer (merge_heads, say): a vector where its 8 elements are
    // consecutive and aligned in memory (every address checked), else 8 element loads.
    std::string view_fn;
    if (!vec && !rp) {
      std::string code;
      Idx idx = c.unravel("r", lead, code, "    ");
      idx.push_back("k");
      const std::string addr = c.address(a, idx, code, "    ");
      if (!addr.empty())
        view_fn = "  __device__ static const T* a_addr(const KParams* p, long long r, long long k) {\n" +
                  code + "    return " + addr + ";\n  }\n";
    }
    const bool view = !view_fn.empty();
    ops += view_fn.empty() ? "  __device__ static const T* a_addr(const KParams*, long long, long long) { "
                             "return nullptr; }\n"
                           : view_fn;
    ops += std::string("  static constexpr bool kAView = ") + (view ? "true" : "false") + ";\n";
    // Shown from the views' shapes (Ctx::axis_contiguous): 8 consecutive k at a multiple of 8 are
    // consecutive in memory, so only the alignment is checked at run time.
    const bool view_rows = view && c.axis_contiguous(a, c.type(a).rank() - 1, 8);
    ops += std::string("  static constexpr bool kAViewRows = ") + (view_rows ? "true" : "false") + ";\n";
    // Address = row part + k part (Ctx::axis_separable): the tiles compute each row's part once
    // instead of dividing by the views' runtime dims for every chunk of every K step.
    const bool view_split = view_rows && c.axis_separable(a, c.type(a).rank() - 1);
    ops += std::string("  static constexpr bool kAViewSplit = ") + (view_split ? "true" : "false") + ";\n";
    // Both operands K-major and A staged by 16-byte copies from per-row sources: the Hopper tiles
    // (gemm_wgmma.cuh). Other views take the mma.sync tiles, which check every address.
    wgmma = linear && (a_direct || view_split);
    ops += std::string("  static constexpr bool kAVec = ") + (vec || view ? "true" : "false") + ";\n";
    std::string ok = "true", body;
    if (view) {
      body =
          "    const T* a0 = a_addr(p, r, k);\n    bool run = (reinterpret_cast<unsigned long long>(a0) & "
          "15) == 0;\n" +
          std::string(
              view_rows
                  ? ""
                  : "#pragma unroll\n    for (int e = 1; e < 8; ++e) run = run && a_addr(p, r, k + e) == "
                    "a0 + e;\n") +
          "    if (run) {\n      GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>(a0)), out);\n    } "
          "else {\n"
          "#pragma unroll\n      for (int e = 0; e < 8; ++e) out[e] = a(p, r, k + e, s0, s1);\n    }\n";
    }
    if (vec) {
      for (ValueId v : srcs) ok += " && (reinterpret_cast<unsigned long long>(" + ptr(v) + ") & 15) == 0";
      body += "    float x[8];\n    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>(" +
              ptr(srcs[0]) + " + r * " + K + " + k)), x);\n";
      if (!norm) {
        body += "#pragma unroll\n    for (int e = 0; e < 8; ++e) out[e] = x[e];\n";
      } else {
        body += "    float g[8];\n    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>(" +
                ptr(srcs[1]) + " + k)), g);\n";
        if (rp->op == Op::LayerNorm)
          body += "    float b[8];\n    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>(" +
                  ptr(srcs[2]) + " + k)), b);\n";
        const std::string shift = rp->op == Op::LayerNorm ? " + b[e]" : "";
        body += "#pragma unroll\n    for (int e = 0; e < 8; ++e) out[e] = " +
                round_to(dt, "((x[e] - s0) * s1 * g[e]" + shift + ")") + ";\n";
      }
    }
    ops += "  __device__ static bool a_vec_ok(const KParams* p) { return " + ok + "; }\n";
    ops +=
        "  __device__ static void a_vec(const KParams* p, long long r, long long k, float s0, float s1, "
        "float* out) {\n" +
        body + "  }\n";
  }
  // The epilogue: bias (linear), rounding to the product's dtype, then the fused elementwise chain.
  // Sibling products: store_in<P> is part P's epilogue at its own column n, and store finds the
  // part of a column of the whole; the tiles (grape_tile_store, gemv.cuh) take the branch once
  // per tile where one part holds all its columns, not once per element.
  // The statements storing `acc` at row r, column n of the output of `core` (cols columns, `cols_c`
  // as C) through the epilogue of `part` (null: the group's own).
  auto epilogue = [&](const ir::Operation& core, const ir::Dim& cols, const std::string& cols_c,
                      const scheduler::FusionGroup* part, const std::string& ind) {
    std::string code;
    Idx oidx = c.unravel("r", lead, code, ind);
    oidx.push_back("n");
    std::vector<ir::Dim> odims = lead;
    odims.push_back(cols);
    c.flat_hints.push_back({odims, oidx, "(r * " + cols_c + " + n)"});
    if (core.op == Op::Linear && core.operands.size() > 2) {
      std::string bias = c.value(core.operands[2], {"n"}, code, ind);
      code += ind + "acc = acc + " + bias + ";\n";
    }
    code += c.emit_output(oidx, round_to(dt, "acc"), ind, part);
    c.flat_hints.pop_back();
    return code;
  };
  if (!parts.empty()) {
    std::string in =
        "  template <int P>\n  __device__ static void store_in(const KParams* p, long long r, long long n, "
        "float acc) {\n";
    std::string dispatch, part_of, begin;
    int64_t off = 0;
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string branch =
          epilogue(*parts[i].core, part_cols[i], std::to_string(part_cols[i]) + "LL", &parts[i], "      ");
      const std::string idx = std::to_string(i), first = std::to_string(off) + "LL";
      const bool last = i + 1 == parts.size();
      in += std::string(i == 0 ? "    if constexpr (P == 0) {\n"
                        : last ? "    } else {\n"
                               : "    } else if constexpr (P == " + idx + ") {\n") +
            branch;
      off += part_cols[i];
      const std::string end = std::to_string(off) + "LL";
      dispatch +=
          last ? "    store_in<" + idx + ">(p, r, col - " + first + ", acc);\n"
               : "    if (col < " + end + ") return store_in<" + idx + ">(p, r, col - " + first + ", acc);\n";
      part_of += last ? "    return " + idx + ";\n" : "    if (col < " + end + ") return " + idx + ";\n";
      begin += last ? "    return " + first + ";\n" : "    if (i == " + idx + ") return " + first + ";\n";
    }
    in += "    }\n  }\n";
    ops += "  static constexpr int kParts = " + std::to_string(parts.size()) + ";\n";
    ops += "  __device__ static int part(long long col) {\n" + part_of + "  }\n";
    ops += "  __device__ static long long part_begin(int i) {\n" + begin + "  }\n";
    ops += in;
    ops += "  __device__ static void store(const KParams* p, long long r, long long col, float acc) {\n" +
           dispatch + "  }\n";
  } else {
    const std::string code = epilogue(op, n_dim, N, nullptr, "    ");
    ops += "  static constexpr int kParts = 1;\n";
    ops += "  __device__ static int part(long long) { return 0; }\n";
    ops += "  __device__ static long long part_begin(int) { return 0; }\n";
    ops += "  __device__ static void store(const KParams* p, long long r, long long n, float acc) {\n" +
           code + "  }\n";
    ops +=
        "  template <int P>\n  __device__ static void store_in(const KParams* p, long long r, long long n, "
        "float "
        "acc) { store(p, r, n, acc); }\n";
  }
  ops += "};\n\n";

  // gemv_kn's column tile: TX threads of 8 columns each. Narrower tiles when the weight is small, so
  // that the tiles alone (without K splits, which cost a round of partial sums through global
  // memory) give about one block per multiprocessor (kGemvTargetBlocks, an H100 has 132).
  int tx = 8;
  // GRAPE_GEMV_TX_EXPERIMENT=1|2|4|8 forces the tile for A/B measurements (docs/kernels.md).
  const char* forced = std::getenv("GRAPE_GEMV_TX_EXPERIMENT");
  const int forced_tx = forced ? std::atoi(forced) : 0;
  if (forced_tx == 1 || forced_tx == 2 || forced_tx == 4 || forced_tx == 8) {
    tx = forced_tx;
  } else if (!linear && n_dim.is_const() && k_dim.is_const()) {
    const int64_t splits = (k_dim.const_value() + scheduler::kGemvMaxKChunk - 1) / scheduler::kGemvMaxKChunk;
    while (tx > 1 && (n_dim.const_value() + tx * 8 - 1) / (tx * 8) * splits < scheduler::kGemvTargetBlocks)
      tx /= 2;
  }
  // Two entry points, so the GEMV path is not held to the tensor-core path's register count:
  // `name` for R <= kGemvMaxRows, `name`_mma otherwise (scheduler::launch_dims says which).
  const bool gemv_tc = scheduler::gemv_on_tensor_cores(n_dim);
  // [K][N] weights of 16-bit elements run gemv_mma.cuh (the weight as mma.sync's A operand, 64
  // columns per tile) where every row of W is 16-byte aligned: N a known multiple of 8.
  const bool kn_mma = !linear && !gemv_tc && (dt == DType::F16 || dt == DType::BF16) && n_dim.is_const() &&
                      n_dim.const_value() % 8 == 0 && scheduler::gemv_kn_mma_enabled();
  const std::string gemv = linear   ? "grape_gemv_nk<Ops>"
                           : kn_mma ? "grape_gemv_kn_mma<Ops>"
                                    : "grape_gemv_kn<Ops, " + std::to_string(tx) + ">";
  const std::string tile = linear   ? "GRAPE_GEMV_NK_TILE"
                           : kn_mma ? "GRAPE_GEMV_MMA_TILE"
                                    : std::to_string(tx * 8);
  // Programmatic dependent launch around the GEMV path (gemv.cuh, grape_gemv_wait): a weight of the
  // program (sibling products: every part's) is read-only for the session, so its first vectors
  // may be requested before the kernel waits for its predecessor; and the kernel may let its
  // successor launch once its weight is read (scheduler::gemv_dependent_launch).
  const int early = scheduler::gemv_dependent_launch();
  const bool weight_before_wait = !gemv_tc && early >= 1 && is_weight(c.f, b);
  ops.insert(
      ops.rfind("};"),
      std::string("  static constexpr bool kWeightBeforeWait = ") + (weight_before_wait ? "true" : "false") +
          ";\n  static constexpr bool kTriggerAfterWeight = " +
          (early >= (gemv_tc ? 3 : 2) ? "true" : "false") + ";\n  static constexpr bool kWeightTma = " +
          (scheduler::gemv_weight_tma() ? "true" : "false") + ";\n  static constexpr bool kAsyncExchange = " +
          (scheduler::gemv_async_exchange() ? "true" : "false") + ";\n");
  std::string s =
      ops + kernel_header(name, gemv_tc ? "256, " + std::to_string(scheduler::kGemvTcBlocksPerSm) : "256, 2",
                          false, !weight_before_wait);
  s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
  if (gemv_tc) {
    s += "  const long long items = ((Ops::R(p) + 15) / 16) * ((Ops::N(p) + 127) / 128) * p->splits;\n";
    s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 16, 128, "
         "1, " +
         std::to_string(scheduler::kGemvTcStages) + ", true>(p, item, grape_smem);\n";
  } else {
    s += "  const long long items = ((Ops::N(p) + " + tile + " - 1) / " + tile + ") * p->splits;\n";
    s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) " + gemv +
         "(p, item, grape_smem);\n";
  }
  s += "}\n\n";
  // A row-count variant (kRowsDefine) is built only for the GEMV path: the rest is left out.
  s += std::string("#ifndef ") + kRowsDefine + "\n";
  s += kernel_header(name + kTensorCoreSuffix, "256, 2", true);
  s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
  s += "  const long long items = ((Ops::R(p) + 63) / 64) * ((Ops::N(p) + 63) / 64) * p->splits;\n";
  s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 64, 64, 2, "
       "4>(p, item, grape_smem);\n";
  s += "}\n";
  // 128 x 128 tiles (8 warps of 64 x 32, 3 stages) for products that fill the GPU with them: twice
  // the operand reuse of 64 x 64, two blocks per multiprocessor (scheduler::kGemmWideBlocksPerSm). Only
  // compiled when a launch needs it (kWideDefine), since it doubles a matrix product's ptxas time.
  s += std::string("\n#ifdef ") + kWideDefine + "\n";
  s +=
      kernel_header(name + kWideSuffix, "256, " + std::to_string(scheduler::gemm_wide_blocks_per_sm()), true);
  s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
  s += "  const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 127) / 128) * p->splits;\n";
  // Compiled for sm_90a (a Hopper device, runtime/cuda/device_program.cpp): the same tiles with
  // warpgroup MMA when both operands are K-major and the rows are 16-byte multiples.
  if (wgmma) {
    s += "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n  if (Ops::K(p) % 8 == 0) {\n";
    s += "    for (long long item = blockIdx.x; item < items; item += gridDim.x)\n"
         "      grape_gemm_wgmma<Ops, 128>(p, item, grape_smem);\n";
    s += "    return;\n  }\n#endif\n";
  }
  s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 128, 128, "
       "2, " +
       std::to_string(scheduler::gemm_wide_stages()) + ">(p, item, grape_smem);\n";
  s += "}\n";
  if (wgmma) {
    // BM x BN wgmma tiles (sm_90a only): 128 x 64 for products that 128 x 128 tiles would leave
    // the GPU idle on (BERT at batch 1: 128 rows), 128 x 96 and 64 x 64 candidates the autotuner
    // measures. They need K % 8 == 0 (scheduler/launch.cpp offers them only then); otherwise the
    // 128-row entries run 128 x 64 mma.sync tiles, with their own item count.
    auto narrow_entry = [&](const char* suffix, int bm, int bn, int stages) {
      const std::string n_tiles =
          "((Ops::N(p) + " + std::to_string(bn - 1) + ") / " + std::to_string(bn) + ")";
      const std::string m_tiles =
          "((Ops::R(p) + " + std::to_string(bm - 1) + ") / " + std::to_string(bm) + ")";
      s += kernel_header(name + suffix, "256, 2", true);
      s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
      s += bm == 128 ? "  if (Ops::K(p) % 8 == 0) {\n" : "  {\n    if (Ops::K(p) % 8 != 0) __trap();\n";
      s += "    const long long items = " + m_tiles + " * " + n_tiles + " * p->splits;\n";
      s += "    for (long long item = blockIdx.x; item < items; item += gridDim.x)\n"
           "      grape_gemm_wgmma<Ops, " +
           std::to_string(bn) + (stages || bm != 128 ? ", " + std::to_string(stages) : std::string()) +
           (bm != 128 ? ", " + std::to_string(bm) : std::string()) + ">(p, item, grape_smem);\n";
      s += "    return;\n  }\n";
      if (bm == 128) {
        s += "  const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 63) / 64) * p->splits;\n";
        s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x)\n"
             "    grape_gemm_mma<Ops, 128, 64, 2, 3>(p, item, grape_smem);\n";
      }
      s += "}\n";
    };
    s += "#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n";
    // The 128 x 64 and 64 x 64 tiles always get their one depth (scheduler::gemm_wgmma64_stages,
    // gemm_wgmma_m64_stages); the 128 x 96 ones 3 or 4 (0: the launch's).
    narrow_entry(kWgmma64Suffix, 128, 64, scheduler::gemm_wgmma64_stages());
    narrow_entry(kWgmma96Suffix, 128, 96, 0);
    narrow_entry(kWgmmaM64Suffix, 64, 64, scheduler::gemm_wgmma_m64_stages());
    s += "#endif\n";
  }
  s += "#endif\n";
  s += "#endif\n";
  c.templates = {"gemv.cuh",      "gemm_mma.cuh", "cluster.cuh",
                 "bulk_copy.cuh", "gemv_mma.cuh", "gemm_wgmma.cuh"};
  L.kind = LaunchRule::MatrixProduct;
  L.wgmma = wgmma;
  L.items = {rows, n_dim, k_dim};
  L.weight_kn = !linear;
  L.gemv_cols = linear ? 128 : kn_mma ? 64 : tx * 8;
  L.gemv_mma = kn_mma;
  L.gemv_tensor_cores = gemv_tc;
  // A weight (no kernel writes it) may be prefetched into L2 by the kernel before this one.
  L.weight_buffer = is_weight(c.f, b) ? c.buf.at(b) : -1;
  return s;
}

// ---- matrix products --------------------------------------------------------------------------
std::string matmul(Ctx& c, const std::string& name, LaunchRule& L) {
  // scheduler/fusion.cpp merges only products the templates take (16-bit weights of the program).
  if (!c.g.parts.empty()) throw std::logic_error("sibling products outside the matrix-product templates");
  const ir::Operation& op = *c.g.core;
  bool linear = op.op == Op::Linear;
  ValueId a = op.operands[0], b = op.operands[1], out = op.results[0];
  DType dt = c.type(out).dtype;
  bool fl = is_float(dt);
  bool tc = dt == DType::F16 || dt == DType::BF16;
  std::string acc = fl ? "float" : "long long";
  const auto& as = c.type(a).shape;
  const auto& bs = c.type(b).shape;
  const auto& os = c.type(out).shape;
  size_t ra = as.size(), rb = bs.size();
  std::string M, K, N, NB;
  std::vector<ir::Dim> batch_dims, m_dims;
  ir::Dim m_dim = 1, n_dim = 1;
  std::string fa, fb, fs;  // bodies of ga(), gb(), gs()
  std::string stats_code;  // the row prologue's x at (b, m, k)
  const ir::Operation* rp = c.g.row_prologue;
  ValueId ax = rp ? rp->operands[0] : a;  // what A's loads read
  Idx aidx;
  if (linear) {
    m_dims.assign(as.begin(), as.end() - 1);
    K = c.dim(as.back());
    n_dim = bs[0];
    M = c.numel(m_dims);
    NB = "1LL";
    aidx = c.unravel("m", m_dims, fa, "  ");
    aidx.push_back("k");
    Idx bidx = {"n", "k"};
    std::string bv = c.value(b, bidx, fb, "  ");
    fb += "  return (" + acc + ")" + bv + ";\n";
  } else {
    bool has_m = ra >= 2, has_n = rb >= 2;
    size_t nbd = os.size() - (has_m ? 1 : 0) - (has_n ? 1 : 0);
    batch_dims.assign(os.begin(), os.begin() + static_cast<long>(nbd));
    if (has_m) m_dim = as[ra - 2];
    if (has_n) n_dim = bs[rb - 1];
    M = c.dim(m_dim);
    K = c.dim(as[ra - 1]);
    NB = c.numel(batch_dims);
    Idx ob = c.unravel("b", batch_dims, fa, "  ");
    size_t abd = has_m ? ra - 2 : 0;
    for (size_t d = 0; d < abd; ++d) aidx.push_back(as[d].is_const(1) ? "0LL" : ob[nbd - abd + d]);
    if (has_m) aidx.push_back("m");
    aidx.push_back("k");
    Idx ob2 = c.unravel("b", batch_dims, fb, "  ");
    Idx bidx;
    size_t bbd = has_n ? rb - 2 : 0;
    for (size_t d = 0; d < bbd; ++d) bidx.push_back(bs[d].is_const(1) ? "0LL" : ob2[nbd - bbd + d]);
    bidx.push_back("k");
    if (has_n) bidx.push_back("n");
    std::string bv = c.value(b, bidx, fb, "  ");
    fb += "  return (" + acc + ")" + bv + ";\n";
  }
  N = c.dim(n_dim);
  // A element (with the row prologue applied: runtime/cpu/norm.cpp, rounded to A's dtype).
  std::string stats_fn;
  if (rp) {
    std::string gx = fa;
    std::string xv = c.value(ax, aidx, gx, "  ");
    gx += "  return " + xv + ";\n";
    stats_fn =
        "__device__ __forceinline__ float gx(const KParams* p, long long b, long long m, long long k) {\n" +
        gx + "}\n";
    std::string xv2 = c.value(ax, aidx, fa, "  ");
    std::string res;
    DType at = c.type(a).dtype;
    switch (rp->op) {
      case Op::Softmax: res = "expf(" + xv2 + " - s0) / s1"; break;
      case Op::LogSoftmax: res = "(" + xv2 + " - s0) - logf(s1)"; break;
      case Op::LayerNorm:
      case Op::RmsNorm: {
        std::string gv = c.value(rp->operands[1], {"k"}, fa, "  ");
        res = "(" + xv2 + " - s0) * s1 * " + gv;
        if (rp->op == Op::LayerNorm) res += " + " + c.value(rp->operands[2], {"k"}, fa, "  ");
        break;
      }
      default: throw std::logic_error("bad row prologue");
    }
    fa += "  return " + round_to(at, "(" + res + ")") + ";\n";
    stats_fn +=
        "__device__ __forceinline__ void row_stats(const KParams* p, long long b, long long m, long long K, "
        "float* s0, "
        "float* s1) {\n" +
        row_stats_code(*rp, "gx(p, b, m, k)", "  ", as[ra - 1]) + "}\n";
  } else {
    std::string av = c.value(a, aidx, fa, "  ");
    fa += "  return (" + acc + ")" + av + ";\n";
  }
  // Store: bias (linear), rounding, epilogue.
  Idx oidx;
  if (linear) {
    oidx = c.unravel("m", m_dims, fs, "  ");
    oidx.push_back("n");
    if (op.operands.size() > 2) {
      std::string bias = c.value(op.operands[2], {"n"}, fs, "  ");
      fs += "  acc = grape_plus(acc, (" + acc + ")" + bias + ");\n";
    }
  } else {
    oidx = c.unravel("b", batch_dims, fs, "  ");
    if (as.size() >= 2) oidx.push_back("m");
    if (bs.size() >= 2) oidx.push_back("n");
  }
  std::string core = fl ? round_to(dt, "acc") : (dt == DType::I32 ? "grape_to_i32(acc)" : "acc");
  fs += c.emit_output(oidx, core, "  ");

  std::string sa = rp ? ", float s0, float s1" : "";
  std::string s;
  s += stats_fn;
  s += "__device__ __forceinline__ " + acc + " ga(const KParams* p, long long b, long long m, long long k" +
       sa + ") {\n" + fa + "}\n";
  s += "__device__ __forceinline__ " + acc +
       " gb(const KParams* p, long long b, long long k, long long n) {\n" + fb + "}\n";
  s += "__device__ __forceinline__ void gs(const KParams* p, long long b, long long m, long long n, " + acc +
       " acc) {\n" + fs + "}\n";
  std::string aargs = rp ? ", s_st[m][0], s_st[m][1]" : "";
  std::string aargs_t = rp ? ", s_st[r][0], s_st[r][1]" : "";
  size_t smem = linear ? 64 : 8 * 16 * 33 * (fl ? 4 : 8);
  smem = std::max<size_t>(smem, tc ? 64 * 68 * 4 : 2 * 16 * 64 * (fl ? 4 : 8));
  s += kernel_header(name);
  s += "  __shared__ __align__(128) unsigned char smem[" + std::to_string(smem) + "];\n";
  if (rp) s += "  __shared__ float s_st[64][2];\n";
  s += "  const long long M = " + M + ", N = " + N + ", K = " + K + ", NB = " + NB + ";\n";
  s += "  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;\n";
  auto stats = [&](const std::string& rows, const std::string& m0, const std::string& ind) {
    if (!rp) return std::string();
    return ind + "for (int r = w; r < " + rows + "; r += 8) {\n" + ind + "  if (" + m0 +
           " + r < M) { float t0, t1; row_stats(p, b, " + m0 +
           " + r, K, &t0, &t1); if (lane == 0) { s_st[r][0] = t0; s_st[r][1] = t1; } }\n" + ind + "}\n" +
           ind + "__syncthreads();\n";
  };
  // GEMV path: M <= 16 (decode), each weight element read once per batch.
  s += "  if (M <= 16) {\n";
  if (linear) {
    // w is [N, K]: a warp per output column, lanes along K (coalesced).
    s += "    const long long ncb = (N + 7) / 8;\n";
    s += "    for (long long item = blockIdx.x; item < NB * ncb; item += gridDim.x) {\n";
    s += "      const long long b = item / ncb, n = (item % ncb) * 8 + w;\n";
    s += stats("(int)M", "0LL", "      ");
    s += "      " + acc + " a[16];\n#pragma unroll\n      for (int m = 0; m < 16; ++m) a[m] = 0;\n";
    s += "      if (n < N) {\n#pragma unroll 4\n        for (long long k = lane; k < K; k += 32) {\n         "
         " const " +
         acc + " bv = gb(p, b, k, n);\n";
    s += "#pragma unroll\n          for (int m = 0; m < 16; ++m) if (m < M) a[m] = grape_mac(a[m], ga(p, b, "
         "m, k" +
         aargs + "), bv);\n";
    s += "        }\n      }\n";
    s += "#pragma unroll\n      for (int m = 0; m < 16; ++m) {\n        if (m < M) {\n          const " +
         acc +
         " t = grape_warp_sum(a[m]);\n          if (lane == 0 && n < N) gs(p, b, m, n, t);\n        }\n      "
         "}\n";
    s += "      __syncthreads();\n    }\n";
  } else {
    // b is [K, N]: lanes along N (coalesced), the 8 warps split K, partial sums meet in shared memory.
    s += "    " + acc + " (*part)[16][33] = (" + acc + " (*)[16][33])smem;\n";
    s += "    const long long ncb = (N + 31) / 32;\n";
    s += "    for (long long item = blockIdx.x; item < NB * ncb; item += gridDim.x) {\n";
    s += "      const long long b = item / ncb, n0 = (item % ncb) * 32, n = n0 + lane;\n";
    s += stats("(int)M", "0LL", "      ");
    s += "      " + acc + " a[16];\n#pragma unroll\n      for (int m = 0; m < 16; ++m) a[m] = 0;\n";
    s += "      if (n < N) {\n#pragma unroll 4\n        for (long long k = w; k < K; k += 8) {\n          "
         "const " +
         acc + " bv = gb(p, b, k, n);\n";
    s += "#pragma unroll\n          for (int m = 0; m < 16; ++m) if (m < M) a[m] = grape_mac(a[m], ga(p, b, "
         "m, k" +
         aargs + "), bv);\n";
    s += "        }\n      }\n";
    s += "#pragma unroll\n      for (int m = 0; m < 16; ++m) part[w][m][lane] = a[m];\n      "
         "__syncthreads();\n";
    s += "      for (int t = threadIdx.x; t < 16 * 32; t += blockDim.x) {\n        const int m = t >> 5, cc "
         "= t & 31;\n";
    s += "        if (m < M && n0 + cc < N) {\n          " + acc +
         " t2 = 0;\n          for (int ww = 0; ww < 8; ++ww) t2 = grape_plus(t2, part[ww][m][cc]);\n";
    s += "          gs(p, b, m, n0 + cc, t2);\n        }\n      }\n      __syncthreads();\n    }\n";
  }
  s += "    return;\n  }\n";
  // Tile path: 64 x 64 output tiles.
  s += "  const long long tm = (M + 63) / 64, tn = (N + 63) / 64;\n";
  s += "  for (long long item = blockIdx.x; item < NB * tm * tn; item += gridDim.x) {\n";
  s += "    const long long b = item / (tm * tn), rem = item % (tm * tn), m0 = (rem / tn) * 64, n0 = (rem % "
       "tn) * 64;\n";
  s += stats("64", "m0", "    ");
  if (tc) {
    std::string T = storage_type(dt);
    std::string conv = dt == DType::F16 ? "__float2half_rn" : "__float2bfloat16_rn";
    s += "    " + T + "* As = (" + T + "*)smem;            // [64][24]\n";
    s += "    " + T + "* Bs = (" + T + "*)(smem + 3072);   // [16][72]\n";
    s += "    float* Cs = (float*)smem;                  // [64][68], after the K loop\n";
    s += "    const int wr = w >> 1, wc = w & 1;\n";
    s += "    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> c0, c1;\n";
    s += "    nvcuda::wmma::fill_fragment(c0, 0.0f);\n    nvcuda::wmma::fill_fragment(c1, 0.0f);\n";
    s += "    for (long long k0 = 0; k0 < K; k0 += 16) {\n";
    s += "      for (int t = threadIdx.x; t < 64 * 16; t += blockDim.x) {\n        const int r = t >> 4, cc "
         "= t & 15;\n";
    s += "        const long long m = m0 + r, k = k0 + cc;\n        As[r * 24 + cc] = " + conv +
         "((m < M && k < K) ? ga(p, b, m, k" + aargs_t + ") : 0.0f);\n      }\n";
    s += "      for (int t = threadIdx.x; t < 16 * 64; t += blockDim.x) {\n        const int r = t >> 6, cc "
         "= t & 63;\n";
    s += "        const long long k = k0 + r, n = n0 + cc;\n        Bs[r * 72 + cc] = " + conv +
         "((k < K && n < N) ? gb(p, b, k, n) : 0.0f);\n      }\n";
    s += "      __syncthreads();\n";
    s += "      nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, " + T +
         ", nvcuda::wmma::row_major> fa;\n";
    s += "      nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, " + T +
         ", nvcuda::wmma::row_major> fb0, fb1;\n";
    s += "      nvcuda::wmma::load_matrix_sync(fa, As + wr * 16 * 24, 24);\n";
    s += "      nvcuda::wmma::load_matrix_sync(fb0, Bs + wc * 32, 72);\n";
    s += "      nvcuda::wmma::load_matrix_sync(fb1, Bs + wc * 32 + 16, 72);\n";
    s += "      nvcuda::wmma::mma_sync(c0, fa, fb0, c0);\n      nvcuda::wmma::mma_sync(c1, fa, fb1, c1);\n";
    s += "      __syncthreads();\n    }\n";
    s += "    nvcuda::wmma::store_matrix_sync(Cs + wr * 16 * 68 + wc * 32, c0, 68, "
         "nvcuda::wmma::mem_row_major);\n";
    s += "    nvcuda::wmma::store_matrix_sync(Cs + wr * 16 * 68 + wc * 32 + 16, c1, 68, "
         "nvcuda::wmma::mem_row_major);\n";
    s += "    __syncthreads();\n";
    s += "    for (int t = threadIdx.x; t < 64 * 64; t += blockDim.x) {\n      const int r = t >> 6, cc = t "
         "& 63;\n";
    s += "      if (m0 + r < M && n0 + cc < N) gs(p, b, m0 + r, n0 + cc, Cs[r * 68 + cc]);\n    }\n";
    s += "    __syncthreads();\n  }\n}\n";
  } else {
    s += "    " + acc + "* As = (" + acc + "*)smem;  // [16][64], k-major\n";
    s += "    " + acc + "* Bs = As + 16 * 64;     // [16][64]\n";
    s += "    const int tr = threadIdx.x >> 4, tcol = threadIdx.x & 15;\n";
    s += "    " + acc + " c[4][4];\n";
    s += "#pragma unroll\n    for (int i = 0; i < 4; ++i)\n#pragma unroll\n      for (int j = 0; j < 4; ++j) "
         "c[i][j] = 0;\n";
    s += "    for (long long k0 = 0; k0 < K; k0 += 16) {\n";
    s += "      for (int t = threadIdx.x; t < 64 * 16; t += blockDim.x) {\n        const int r = t >> 4, cc "
         "= t & 15;\n";
    s += "        const long long m = m0 + r, k = k0 + cc;\n        As[cc * 64 + r] = (m < M && k < K) ? "
         "ga(p, b, m, k" +
         aargs_t + ") : (" + acc + ")0;\n      }\n";
    s += "      for (int t = threadIdx.x; t < 16 * 64; t += blockDim.x) {\n        const int r = t >> 6, cc "
         "= t & 63;\n";
    s += "        const long long k = k0 + r, n = n0 + cc;\n        Bs[r * 64 + cc] = (k < K && n < N) ? "
         "gb(p, b, k, n) : (" +
         acc + ")0;\n      }\n";
    s += "      __syncthreads();\n";
    s += "      for (int kk = 0; kk < 16; ++kk) {\n";
    s += "#pragma unroll\n        for (int i = 0; i < 4; ++i)\n#pragma unroll\n          for (int j = 0; j < "
         "4; ++j)\n";
    s += "            c[i][j] = grape_mac(c[i][j], As[kk * 64 + tr * 4 + i], Bs[kk * 64 + tcol * 4 + j]);\n  "
         "    }\n";
    s += "      __syncthreads();\n    }\n";
    s += "    for (int i = 0; i < 4; ++i)\n      for (int j = 0; j < 4; ++j) {\n";
    s += "        const long long m = m0 + tr * 4 + i, n = n0 + tcol * 4 + j;\n        if (m < M && n < N) "
         "gs(p, b, m, n, c[i][j]);\n      }\n";
    s += "  }\n}\n";
  }
  L.kind = LaunchRule::Tiles;
  ir::Dim nb = 1;
  for (const auto& d : batch_dims) nb = nb * d;
  ir::Dim mm = 1;
  if (linear)
    for (const auto& d : m_dims) mm = mm * d;
  else
    mm = m_dim;
  L.items = {nb, mm, n_dim};
  L.gemv_cols = linear ? 8 : 32;
  return s;
}

}  // namespace

std::string matrix_product_kernel(Ctx& c, const std::string& name, LaunchRule& L) {
  return template_matmul_applies(c, *c.g.core) ? template_matmul(c, name, L) : matmul(c, name, L);
}

}  // namespace grape::jit::detail
