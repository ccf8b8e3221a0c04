// The glue of a fused attention group (jit/kernels/attention.cuh; scheduler/fusion.h says when
// attention is fused).
#include <functional>

#include "jit/emit_context.h"
#include "jit/kernel_source.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"

namespace grape::jit::detail {

using ir::ValueId;

// ---- fused attention (jit/kernels/attention.cuh) ---------------------------------------------
// The group: scores = q @ k^T (g.attention_scores), an elementwise chain, the softmax row prologue,
// and its core p @ v with the epilogue. Batch axes (every axis but the last two of the output)
// are flattened into b; operands broadcast over them as numpy matmul does.
std::string attention_kernel(Ctx& c, const std::string& name, LaunchRule& L) {
  c.readonly_inputs = true;  // an attention group holds no in-place op
  const ir::Operation& qk = *c.g.attention_scores;
  const ir::Operation& pv = *c.g.core;
  const ir::Operation& sm = *c.g.row_prologue;
  ValueId q = qk.operands[0], kt = qk.operands[1], v = pv.operands[1], out = pv.results[0];
  const auto& os = c.type(out).shape;
  std::vector<ir::Dim> batch(os.begin(), os.end() - 2);
  const ir::Dim s_dim = os[os.size() - 2], dv_dim = os.back();
  const ir::Dim kv_dim = c.type(kt).shape.back(), dk_dim = c.type(q).shape.back();
  const int64_t dvt = (dv_dim.const_value() + 31) / 32;

  // A function of (p, b, <a>, <c>) evaluating value `x` at batch(b) + idx.
  auto fn = [&](const std::string& sig, const std::function<std::string(const Idx&, std::string&)>& body) {
    std::string code;
    Idx ob = c.unravel("b", batch, code, "    ");
    std::string ret = body(ob, code);
    return "  __device__ static " + sig + " {\n" + code + ret + "  }\n";
  };
  auto at = [](Idx ob, const std::string& x, const std::string& y) {
    ob.push_back(x);
    ob.push_back(y);
    return ob;
  };
  std::string ops = "struct Ops {\n";
  ops += "  __device__ static long long S(const KParams* p) { return " + c.dim(s_dim) + "; }\n";
  ops += "  __device__ static long long KV(const KParams* p) { return " + c.dim(kv_dim) + "; }\n";
  ops += "  __device__ static long long DK(const KParams*) { return " + c.dim(dk_dim) + "; }\n";
  ops += "  __device__ static long long DV(const KParams*) { return " + c.dim(dv_dim) + "; }\n";
  ops += fn("float q(const KParams* p, long long b, long long i, long long d)",
            [&](const Idx& ob, std::string& code) {
              return "    return " + c.value(q, c.broadcast_index(q, at(ob, "i", "d")), code, "    ") + ";\n";
            });
  ops += fn("float k(const KParams* p, long long b, long long j, long long d)", [&](const Idx& ob,
                                                                                    std::string& code) {
    return "    return " + c.value(kt, c.broadcast_index(kt, at(ob, "d", "j")), code, "    ") + ";\n";
  });
  ops += fn("float v(const KParams* p, long long b, long long j, long long d)",
            [&](const Idx& ob, std::string& code) {
              return "    return " + c.value(v, c.broadcast_index(v, at(ob, "j", "d")), code, "    ") + ";\n";
            });
  ops += fn("float score(const KParams* p, long long b, long long i, long long j, float dot)",
            [&](const Idx& ob, std::string& code) {
              c.leaf = qk.results[0];
              c.leaf_expr = round_to(c.type(qk.results[0]).dtype, "dot");
              std::string x = c.value(sm.operands[0], at(ob, "i", "j"), code, "    ");
              c.leaf = ir::kNoValue;
              return "    return " + x + ";\n";
            });
  int64_t v_lanes = 0, k_vecs = 0;
  // Many query rows: the tensor-core kernel (scheduler/fusion.h checked q, k, v and the softmax
  // share one 16-bit type and the head widths fit).
  const bool mma = scheduler::attention_on_tensor_cores(s_dim);
  // Row pointers of k and v when both are buffers seen through views only: the kernel then reads
  // a key's row with vector loads from one address per row (when the row is contiguous and
  // aligned, which it checks) instead of one index computation per element.
  {
    std::string kc, vc, qc;
    Idx ob = c.unravel("b", batch, kc, "    ");
    std::string ka = c.address(kt, c.broadcast_index(kt, at(ob, "d", "j")), kc, "    ");
    Idx ob2 = c.unravel("b", batch, vc, "    ");
    std::string va = c.address(v, c.broadcast_index(v, at(ob2, "j", "d")), vc, "    ");
    const bool rows = !ka.empty() && !va.empty() && c.type(kt).dtype == c.type(v).dtype;
    const std::string T = storage_type(c.type(rows || mma ? kt : q).dtype);
    ops += "  typedef " + T + " T;\n";
    ops += std::string("  static constexpr bool kRows = ") + (rows ? "true" : "false") + ";\n";
    if (mma) {
      // attention_mma.cuh stages each operand by 16-byte copies where its address is known.
      Idx ob3 = c.unravel("b", batch, qc, "    ");
      std::string qa = c.address(q, c.broadcast_index(q, at(ob3, "i", "d")), qc, "    ");
      auto flag = [](const char* n, const std::string& a) {
        return std::string("  static constexpr bool ") + n + " = " + (a.empty() ? "false" : "true") + ";\n";
      };
      ops += flag("kQAt", qa) + flag("kKAt", ka) + flag("kVAt", va);
      // Rows shown contiguous from the views' shapes (Ctx::axis_contiguous): the kernel then checks
      // only a chunk's alignment, not its 8 addresses. k is read as kᵀ, whose head axis is its
      // second to last.
      auto contig = [&](const char* n, ValueId x, size_t axis, const std::string& a) {
        const bool yes = !a.empty() && c.axis_contiguous(x, axis, 8);
        return std::string("  static constexpr bool ") + n + " = " + (yes ? "true" : "false") + ";\n";
      };
      ops += contig("kQRows", q, c.type(q).rank() - 1, qa) + contig("kKRows", kt, c.type(kt).rank() - 2, ka) +
             contig("kVRows", v, c.type(v).rank() - 1, va);
      auto fn_at = [](const char* n, const char* r, const std::string& code, const std::string& a) {
        return std::string("  __device__ static const T* ") + n +
               "(const KParams* p, long long b, long long " + r + ", long long d) {\n" +
               (a.empty() ? "    return nullptr;\n" : code + "    return " + a + ";\n") + "  }\n";
      };
      ops += fn_at("q_at", "i", qc, qa) + fn_at("k_at", "j", kc, ka) + fn_at("v_at", "j", vc, va);
    }
    // Lanes per v row for 16-byte v loads: DV / (elements per 16 bytes), when that is a power of two <= 32.
    if (rows) {
      const int64_t per_vec = 16 / static_cast<int64_t>(dtype_size(c.type(v).dtype));
      const int64_t dv = dv_dim.const_value();
      if (per_vec > 0 && dv % per_vec == 0 && dv / per_vec <= 32 &&
          ((dv / per_vec) & (dv / per_vec - 1)) == 0)
        v_lanes = dv / per_vec;
      // Key rows prefetched whole (attention.cuh, KVN): 16-bit keys of at most eight 16-byte vectors.
      const int64_t dk = dk_dim.const_value();
      if (per_vec == 8 && dtype_size(c.type(kt).dtype) == 2 && dk % 8 == 0 && dk / 8 <= 8) k_vecs = dk / 8;
    }
    if (!mma) {
      ops +=
          "  __device__ static const T* k_at(const KParams* p, long long b, long long j, long long d) {\n" +
          (rows ? kc + "    return " + ka + ";\n" : "    return nullptr;\n") + "  }\n";
      ops +=
          "  __device__ static const T* v_at(const KParams* p, long long b, long long j, long long d) {\n" +
          (rows ? vc + "    return " + va + ";\n" : "    return nullptr;\n") + "  }\n";
    }
  }
  // attention_mma.cuh rounds the probabilities by packing them into 16-bit mma operands.
  if (!mma)
    ops += "  __device__ static float prob(float x) { return " + round_to(c.type(sm.results[0]).dtype, "x") +
           "; }\n";
  ops += fn("void store(const KParams* p, long long b, long long i, long long d, float acc)",
            [&](const Idx& ob, std::string& code) {
              code += c.emit_output(at(ob, "i", "d"), round_to(c.type(out).dtype, "acc"), "    ");
              return std::string();
            });
  if (mma) {
    // The output's address where the kernel stores the product's rounded result itself: no epilogue,
    // or a permute of it (the merge of the heads), in the type of the operands, with d indexing the
    // stored buffer's last axis (unit stride). attention_mma.cuh then writes rows in 16-byte pieces.
    const ir::Operation& root = *c.g.root;
    const bool permuted = root.op == ir::Op::Permute && root.operands[0] == out;
    std::string code, addr;
    if ((&root == &pv || permuted) && c.type(root.results[0]).dtype == c.type(kt).dtype) {
      Idx idx = at(c.unravel("b", batch, code, "    "), "i", "d");
      if (permuted) {
        Idx moved;
        for (int64_t axis : root.attrs.axes) moved.push_back(idx.at(static_cast<size_t>(axis)));
        idx = moved;
      }
      if (idx.back() == "d")
        addr = "(T*)p->buf[" + std::to_string(c.buf.at(root.results[0])) + "] + " +
               c.buffer_offset(c.type(root.results[0]).shape, idx);
    }
    ops += std::string("  static constexpr bool kOutAt = ") + (addr.empty() ? "false" : "true") + ";\n";
    ops += "  __device__ static T* out_at(const KParams* p, long long b, long long i, long long d) {\n" +
           (addr.empty() ? "    return nullptr;\n" : code + "    return " + addr + ";\n") + "  }\n";
  }
  // Programmatic dependent launch: the decode kernel lets its successor launch once its passes
  // over the keys are done (scheduler::gemv_dependent_launch 3; attention.cuh).
  ops += std::string("  static constexpr bool kTriggerAfterKeys = ") +
         (scheduler::gemv_dependent_launch() >= 3 ? "true" : "false") + ";\n";
  ops += "};\n\n";

  std::string s = ops;
  if (mma) {
    // Two entry points (scheduler/launch.cpp picks): 64 rows, one warp per 16 query rows (128
    // threads); and 8 warps (256 threads; kTensorCoreSuffix, LaunchDims::tensor_cores): 32 rows,
    // four warps per 16 rows where the head widths allow (scheduler::attention_mma_split_rows,
    // which the launch asks too), else 64 rows and two.
    auto pad16 = [](const ir::Dim& d) { return std::to_string((d.const_value() + 15) / 16 * 16); };
    const int64_t split_rows =
        scheduler::attention_mma_split_rows(dk_dim.const_value(), dv_dim.const_value());
    for (int entry : {1, 2}) {
      const int64_t rows = entry == 1 ? 64 : split_rows;
      const std::string shape = entry == 1 ? "4, 1" : rows == 32 ? "2, 4" : "4, 2";
      s += kernel_header(entry == 1 ? name : name + kTensorCoreSuffix, entry == 1 ? "128" : "256");
      s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
      s += "  const long long items = " + c.numel(batch) + " * ((Ops::S(p) + " + std::to_string(rows - 1) +
           ") / " + std::to_string(rows) + ");\n";
      s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_attention_mma<Ops, " +
           pad16(dk_dim) + ", " + pad16(dv_dim) + ", " + shape + ">(p, item, grape_smem);\n}\n";
    }
    c.templates = {"attention.cuh", "gemm_mma.cuh", "attention_mma.cuh"};
  } else {
    s += kernel_header(name, "256");
    s += "  extern __shared__ __align__(16) unsigned char grape_smem[];\n";
    s += "  const long long items = " + c.numel(batch) + " * ((Ops::S(p) + p->splits - 1) / p->splits);\n";
    s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_attention<Ops, " +
         std::to_string(dvt) + ", " + std::to_string(v_lanes) + ", " + std::to_string(k_vecs) +
         ">(p, item, (float*)grape_smem);\n}\n";
    c.templates = {"attention.cuh"};
  }
  L.kind = LaunchRule::Attention;
  L.attention_mma = mma;
  if (mma) L.threads = 128;  // or 256 for the second entry point: scheduler/launch.cpp picks
  ir::Dim nb = 1;
  for (const auto& d : batch) nb = nb * d;
  L.items = {nb, s_dim, kv_dim, dk_dim, dv_dim};
  return s;
}

}  // namespace grape::jit::detail
