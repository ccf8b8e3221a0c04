// Kernel bodies by the shape of their work: pointwise (grid-stride over elements), row kernels
// (reductions, arg-reductions, softmax, layer/rms norm, cumsum, topk: the glue of the templates
// jit/kernels/reduce.cuh, row_norm.cuh, scan.cuh, topk.cuh), slice_update (slice_update.cuh), fused
// attention, and matrix products (the templates of jit/kernels/ for f16/bf16 weights, SIMT/WMMA
// tiles otherwise).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "jit/emit_context.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"
#include "scheduler/prefetch.h"

namespace grape::jit::detail {

using ir::Op;
using ir::ValueId;

namespace {

const char* kGridStride =
    "for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long "
    "long)gridDim.x * blockDim.x)";

}  // namespace

std::string kernel_header(const std::string& name, const std::string& bounds, bool prefetch, bool wait) {
  // The block is a kernel parameter (__grid_constant__: read in place from the parameter bank
  // through the constant cache, no copy), so reading it costs no dependent global load at the
  // kernel's start; the bodies take `const KParams*` as before. GRAPE_GRID_WAIT
  // (grid_dependency.cuh) comes first: a kernel launched behind a programmatic graph edge touches nothing
  // before its predecessor has finished. Whether it lets its successor launch at once or only as
  // its blocks exit is scheduler::launch_dependents_early.
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + name +
                  "(const __grid_constant__ KParams kp) {\n";
  // The kernel timeline's stamps (grid_dependency.cuh), only in sources built to take them.
  const bool timeline = scheduler::kernel_timeline();
  if (timeline) s += "  GRAPE_TIMELINE_SCOPE(kp);\n";
  if (wait) s += "  GRAPE_GRID_WAIT();\n";
  if (wait && timeline) s += "  GRAPE_TIMELINE_WAITED(&kp);\n";
  if (scheduler::launch_dependents_early()) s += "  GRAPE_LAUNCH_DEPENDENTS();\n";
  s += "  const KParams* const p = &kp;\n";
  if (!wait) return s;
  // Every kernel checks the predicate, not only predicated ones: p->pred is null for the others
  // (DeviceProgram::fill_blocks), and the same source in a predicated and an unpredicated position
  // (a layer inside and outside an `if`) is then one kernel, built once. The cost is one uniform
  // branch on a parameter.
  s += "  if (p->pred && !*p->pred) return;\n";
  // `prefetch`: the next matrix product's weight into L2 (grape_prefetch_l2; no effect on any
  // result), only in the tensor-core entry points of matrix products (and gemv_mma.cuh's body,
  // before its wait): the call costs a kernel about 0.08 us of critical path even with nothing to
  // fetch (runs 80, 81), which the overhead chain would pay for nothing. GRAPE_PREFETCH=0 leaves
  // it out (the same-run baseline).
  if (prefetch && scheduler::prefetch_mode() != scheduler::PrefetchMode::None)
    s += "  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);\n";
  return s;
}

namespace {

std::vector<ir::Dim> dims_of(Ctx& c, ValueId v) { return c.type(v).shape; }

// ---- pointwise ------------------------------------------------------------------------------
// Data movement: a group whose result is one buffer read through views and gathers (take, slice,
// permute, expand, reshape; no arithmetic, no cast), with a constant innermost extent that is a
// multiple of 16 bytes and contiguous in the source. Each thread then copies 16 bytes: one element
// per thread moved a beam search's two KV-cache reorders (47 MB each per token) at 0.9 TB/s. The
// addresses are checked at run time (a view's offset need not be aligned); a misaligned chunk is
// copied element by element. "" when the group is not such a copy.
std::string copy_kernel(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& root = *c.g.root;
  switch (root.op) {
    case Op::Take:
    case Op::Slice:
    case Op::Permute:
    case Op::Expand:
    case Op::Reshape: break;
    default: return "";
  }
  const ValueId out = root.results[0];
  const auto dims = dims_of(c, out);
  const size_t es = dtype_size(c.type(out).dtype);
  if (dims.empty() || es == 0 || 16 % es != 0 || !dims.back().is_const()) return "";
  const int64_t vec = static_cast<int64_t>(16 / es), last = dims.back().const_value();
  if (last % vec != 0) return "";
  // The root's own view or gather is part of the address (Ctx keeps the root out of `prod`, as
  // other kernels compute it themselves); it is taken out again before returning.
  c.prod[out] = &root;
  const int tmp = c.tmp, unravel_tmp = c.unravel_tmp;
  const size_t unravels = c.unravels.size();
  std::string body, ind = "    ";
  std::string addr;
  std::vector<ir::Dim> vdims = dims;
  vdims.back() = ir::Dim(last / vec);
  if (c.axis_contiguous(out, dims.size() - 1, vec)) {
    Idx idx = c.unravel("gi", vdims, body, ind);
    idx.back() = "(" + idx.back() + " * " + std::to_string(vec) + "LL)";
    addr = c.address(out, idx, body, ind);
    if (!addr.empty()) {
      const std::string T = storage_type(c.type(out).dtype);
      body += ind + T + "* o = (" + T + "*)p->buf[" + std::to_string(c.buf.at(out)) + "] + " +
              c.buffer_offset(dims, idx) + ";\n";
      body += ind + "if (((reinterpret_cast<size_t>(" + addr +
              ") | reinterpret_cast<size_t>(o)) & 15) == 0) {\n" + ind +
              "  *reinterpret_cast<uint4*>(o) = *reinterpret_cast<const uint4*>(" + addr + ");\n" + ind +
              "} else {\n" + ind + "  for (int e = 0; e < " + std::to_string(vec) + "; ++e) o[e] = " + addr +
              "[e];\n" + ind + "}\n";
    }
  }
  c.prod.erase(out);
  if (addr.empty()) {
    c.tmp = tmp;  // as if never tried: the fallback's names and so its text are unchanged
    c.unravel_tmp = unravel_tmp;
    c.unravels.resize(unravels);
    return "";
  }
  std::string s = kernel_header(name);
  s += "  const long long n = " + c.numel(vdims) + ";\n  " + kGridStride + " {\n" + body + "  }\n}\n";
  L.kind = LaunchRule::Elementwise;
  L.items = vdims;
  return s;
}

std::string pointwise(Ctx& c, const std::string& name, LaunchRule& L) {
  std::string copy = copy_kernel(c, name, L);
  if (!copy.empty()) return copy;
  ValueId out = c.g.root->results[0];
  auto dims = dims_of(c, out);
  std::string body;
  std::string ind = "    ";
  Idx idx = c.unravel("gi", dims, body, ind);
  std::string v = c.compute(*c.g.root, idx, body, ind);
  body += ind + c.store(out, idx, v) + "\n";
  std::string s = kernel_header(name);
  s += "  const long long n = " + c.numel(dims) + ";\n  " + kGridStride + " {\n" + body + "  }\n}\n";
  L.kind = LaunchRule::Elementwise;
  L.items = dims;
  return s;
}

// ---- rows: the input split into kept axes (rows) and reduced axes ------------------------------
// The glue of the row templates (jit/kernels/reduce.cuh, scan.cuh, row_norm.cuh, topk.cuh): an Ops
// struct with the row's elements and the output's stores, and an entry point that loops over the
// rows (or parts of rows) and calls the template's body for each.
struct RowSpace {
  std::vector<size_t> kept, red;
  std::vector<ir::Dim> kept_dims, red_dims;
};

RowSpace row_space(Ctx& c, ValueId x, const std::vector<int64_t>& axes) {
  RowSpace r;
  const auto& s = c.type(x).shape;
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = false;
    for (int64_t a : axes) red = red || a == static_cast<int64_t>(d);
    (red ? r.red : r.kept).push_back(d);
    (red ? r.red_dims : r.kept_dims).push_back(s[d]);
  }
  return r;
}

Idx join(const RowSpace& r, const Idx& kept, const Idx& red) {
  Idx out(r.kept.size() + r.red.size());
  for (size_t i = 0; i < r.kept.size(); ++i) out[r.kept[i]] = kept[i];
  for (size_t i = 0; i < r.red.size(); ++i) out[r.red[i]] = red[i];
  return out;
}

// `const KParams* p`, or `const KParams*` where the function's expression does not read p.
std::string params_arg(const std::string& expr) {
  return expr.find("p->") == std::string::npos ? "const KParams*" : "const KParams* p";
}

// The Ops members that say what a row is: rows(p), cnt(p) (`cnt`: the row length's C expression),
// the row's kept indices as Ops::Row, unravelled once per row by Ops::row, and Ops::x(p, r, j),
// the row's element j (the fused input) as `type`. x and out then do only the column's index
// arithmetic: unravelled in out, a row's 64-bit divisions were redone for every element, since the
// compiler cannot keep p->shape in registers across out's global stores. Returns the Row's fields
// (r.k0, ...): the kept indices, for the output's index.
Idx row_ops(Ctx& c, ValueId x, const RowSpace& r, const std::string& cnt, const std::string& type,
            std::string& ops) {
  const std::string rows = c.numel(r.kept_dims);
  ops += "  __device__ static long long rows(" + params_arg(rows) + ") { return " + rows + "; }\n";
  ops += "  __device__ static long long cnt(" + params_arg(cnt) + ") { return " + cnt + "; }\n";
  Idx kept_fields;
  {
    std::string code;
    Idx kept = c.unravel("row", r.kept_dims, code, "    ");
    std::string fields, init;
    for (size_t i = 0; i < kept.size(); ++i) {
      fields += (i ? ", k" : "k") + std::to_string(i);
      init += (i ? ", " : "") + kept[i];
      kept_fields.push_back("r.k" + std::to_string(i));
    }
    ops += kept.empty() ? "  struct Row {};\n" : "  struct Row { long long " + fields + "; };\n";
    ops += "  __device__ static Row row(const KParams* p, long long row) {\n" + code + "    return Row{" +
           init + "};\n  }\n";
  }
  std::string code;
  Idx red = c.unravel("j", r.red_dims, code, "    ");
  std::string v = c.value(x, join(r, kept_fields, red), code, "    ");
  ops += "  __device__ static " + type + " x(const KParams* p, const Row& r, long long j) {\n" + code +
         "    return " + v + ";\n  }\n";
  return kept_fields;
}

// The entry point's loop over the rows, one block per row: body(p, row) for each.
std::string block_per_row(const std::string& body) {
  std::string s = "  const long long rows = Ops::rows(p);\n";
  s += "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) " + body + "(p, row);\n}\n";
  return s;
}

// Reductions of long rows known at compile time take blocks of 1024 threads, as the norms do
// (kRowNormWideBlockMinCols below): a row's loop is the whole kernel, one block per row, and few
// rows (generate's argmax over 5 x 50257 logits) leave most of the GPU idle, so more threads per
// row is what shortens it (57 -> 35 us with eight loads in flight per thread, run 121).
constexpr int64_t kReduceWideBlockMinCols = 8192;
bool wide_reduction(const RowSpace& r) {
  int64_t n = 1;
  for (const ir::Dim& d : r.red_dims) {
    if (!d.is_const()) return false;
    n *= d.const_value();
  }
  return n >= kReduceWideBlockMinCols;
}
// A wide row kernel (1024 threads, rows of known length): on sm_90 a few such rows each take a
// cluster of blocks (LaunchRule::cluster_rows, scheduler/launch.cpp).
void cluster_wide_rows(const RowSpace& r, LaunchRule& L) {
  int64_t n = 1;
  for (const ir::Dim& d : r.red_dims) n *= d.const_value();
  L.threads = 1024;
  L.cluster_rows = true;
  L.row_len = n;
}

// sum, mean, prod, max, min, all, any (jit/kernels/reduce.cuh, grape_reduce_row).
std::string reduce(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  DType xt = c.type(x).dtype, ot = c.type(out).dtype;
  RowSpace r = row_space(c, x, op.attrs.axes);
  bool fl = is_float(xt), logical = op.op == Op::All || op.op == Op::Any;
  std::string acc_t = logical ? "int" : fl ? "float" : "long long";
  std::string init, comb;
  switch (op.op) {
    case Op::Sum:
    case Op::Mean:
      init = fl ? "0.0f" : "0LL";
      comb = "GrapeAdd";
      break;
    case Op::Prod:
      init = fl ? "1.0f" : "1LL";
      comb = "GrapeMul";
      break;
    case Op::Max:
      init = fl ? "-__int_as_float(0x7f800000)" : "(-9223372036854775807LL - 1)";
      comb = "GrapeMax";
      break;
    case Op::Min:
      init = fl ? "__int_as_float(0x7f800000)" : "9223372036854775807LL";
      comb = "GrapeMin";
      break;
    case Op::All:
      init = "1";
      comb = "GrapeAnd";
      break;
    case Op::Any:
      init = "0";
      comb = "GrapeOr";
      break;
    default: throw std::logic_error("not a reduction");
  }
  std::string ops = "struct Ops {\n";
  ops += "  using Acc = " + acc_t + ";\n  using Combine = " + comb + ";\n";
  ops += "  __device__ static Acc init() { return " + init + "; }\n";
  Idx kept = row_ops(c, x, r, c.numel(r.red_dims), "Acc", ops);
  std::string fin;
  if (logical)
    fin = "(acc != 0)";
  else if (op.op == Op::Mean)
    fin = round_to(ot, "(acc / (float)cnt(p))");  // mean of nothing: NaN
  else if (fl)
    fin = round_to(ot, "acc");
  else
    fin = ot == DType::I32 ? "grape_to_i32(acc)" : "acc";
  Idx oidx;
  for (size_t d = 0, k = 0; d < c.type(x).rank(); ++d) {
    bool red = std::find(r.red.begin(), r.red.end(), d) != r.red.end();
    if (!red)
      oidx.push_back(kept[k++]);
    else if (op.attrs.keepdims)
      oidx.push_back("0LL");
  }
  ops += "  __device__ static void out(const KParams* p, const Row& r, Acc acc) {\n" +
         c.emit_output(oidx, fin, "    ") + "  }\n};\n\n";
  const bool wide = wide_reduction(r);
  std::string s = ops + kernel_header(name, wide ? "1024" : "256") + "  grape_reduce_rows<Ops>(p);\n}\n";
  c.templates = {"cluster.cuh", "reduce.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  if (wide) cluster_wide_rows(r, L);
  return s;
}

// argmax, argmin (jit/kernels/reduce.cuh, grape_arg_reduce_row).
std::string arg_reduce(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0];
  bool fl = is_float(c.type(x).dtype);
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string ops = "struct Ops {\n";
  ops += std::string("  using T = ") + (fl ? "float" : "long long") + ";\n";
  ops += std::string("  static constexpr bool kMax = ") + (op.op == Op::ArgMax ? "true" : "false") + ";\n";
  Idx kept = row_ops(c, x, r, c.numel(r.red_dims), "T", ops);
  Idx oidx;
  for (size_t d = 0, k = 0; d < c.type(x).rank(); ++d) {
    if (static_cast<int64_t>(d) != op.attrs.axis)
      oidx.push_back(kept[k++]);
    else if (op.attrs.keepdims)
      oidx.push_back("0LL");
  }
  ops += "  __device__ static void out(const KParams* p, const Row& r, long long i) {\n" +
         c.emit_output(oidx, "(int)i", "    ") + "  }\n};\n\n";
  const bool wide = wide_reduction(r);
  std::string s = ops + kernel_header(name, wide ? "1024" : "256") + "  grape_arg_reduce_rows<Ops>(p);\n}\n";
  c.templates = {"cluster.cuh", "reduce.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  if (wide) cluster_wide_rows(r, L);
  return s;
}

// A float literal of v in decimal, usable in a constant expression: "%.9g" round-trips a float;
// a ".0" where it printed an integer ("1f" is not C++), then the suffix.
std::string f32_decimal(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
  std::string s = buf;
  if (s.find_first_of(".eEni") == std::string::npos) s += ".0";
  return s + "f";
}

// topk with k up to GRAPE_TOPK_MAX_K (jit/kernels/topk.cuh) takes one pass with a list per
// thread and kTopKUnroll elements in flight: with k = 16 that is 96-128 registers (ptxas, sm_90),
// so blocks of 512 threads; 1024 threads or 16 elements at 1024 spill.
constexpr int64_t kTopKOnePassMaxK = 16;
constexpr int kTopKThreads = 512;
constexpr int kTopKUnroll = 8;

// The longest rows the warp-per-row kernel (jit/kernels/row_norm.cuh, grape_row_norm_warp) takes:
// 32 registers of values per lane. Its rows per block (GRAPE_ROW_NORM_WARPS there).
constexpr int64_t kRowNormWarpMaxCols = 32 * 32;
// Longer rows take the block-per-row kernel (grape_row_norm_rows), with 1024 threads from this
// length on (a known length): one block must keep enough loads in flight to read the row at a
// useful rate (a beam search's 5 rows of 50257: 72 us with 256 threads and three passes).
constexpr int64_t kRowNormWideBlockMinCols = 8192;
constexpr int kRowNormWarps = 4;

// The Ops of jit/kernels/row_norm.cuh (both kernels): the kind and epsilon, the row (row_ops,
// `cnt` the row length's C expression) and out(row, j, y): gamma and beta, the rounding and the
// fused epilogue.
std::string norm_ops(Ctx& c, const RowSpace& r, const std::string& cnt) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  const char* kind = op.op == Op::Softmax      ? "kGrapeSoftmax"
                     : op.op == Op::LogSoftmax ? "kGrapeLogSoftmax"
                     : op.op == Op::LayerNorm  ? "kGrapeLayerNorm"
                                               : "kGrapeRmsNorm";
  const bool affine = op.op == Op::LayerNorm || op.op == Op::RmsNorm;  // gamma (and beta), an epsilon
  const std::string eps = f32_decimal(affine ? op.attrs.eps : 0.0);
  std::string ops = "struct Ops {\n";
  ops += std::string("  static constexpr int kKind = ") + kind + ";\n";
  ops += std::string("  static constexpr float kEps = ") + eps + ";\n";
  Idx kept_fields = row_ops(c, x, r, cnt, "float", ops);
  std::string code;
  Idx red = c.unravel("j", r.red_dims, code, "    ");
  Idx full = join(r, kept_fields, red);
  std::string res = "y";
  if (affine) {
    res = "y * " + c.value(op.operands[1], {full.back()}, code, "    ");
    if (op.op == Op::LayerNorm) res += " + " + c.value(op.operands[2], {full.back()}, code, "    ");
  }
  ops += "  __device__ static void out(const KParams* p, const Row& r, long long j, float y) {\n" + code +
         c.emit_output(full, round_to(c.type(out).dtype, "(" + res + ")"), "    ") + "  }\n";
  return ops + "};\n\n";
}

// softmax / log_softmax over one axis, layer_norm / rms_norm over the last (runtime/cpu/norm.cpp;
// jit/kernels/row_norm.cuh).
std::string norm(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0];
  bool sm = op.op == Op::Softmax || op.op == Op::LogSoftmax;
  int64_t axis = sm ? op.attrs.axis : static_cast<int64_t>(c.type(x).rank()) - 1;
  RowSpace r = row_space(c, x, {axis});
  c.templates = {"cluster.cuh", "row_norm.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  const bool known = r.red_dims.size() == 1 && r.red_dims[0].is_const();
  if (known && r.red_dims[0].const_value() >= 1 && r.red_dims[0].const_value() <= kRowNormWarpMaxCols) {
    // A warp per row. Read-only loads (emit_context.h): out's gamma and beta loads may then be
    // issued ahead of the stores of the row's earlier elements instead of one store's latency apart.
    const int64_t cols = r.red_dims[0].const_value();
    c.readonly_inputs = true;
    std::string s =
        norm_ops(c, r, std::to_string(cols) + "LL") + kernel_header(name, std::to_string(32 * kRowNormWarps));
    s += "  grape_row_norm<Ops, " + std::to_string((cols + 31) / 32) + ">(p);\n}\n";
    L.rows_per_block = kRowNormWarps;
    L.threads = 32 * kRowNormWarps;
    return s;
  }
  const bool wide = known && r.red_dims[0].const_value() >= kRowNormWideBlockMinCols;
  std::string s = norm_ops(c, r, c.numel(r.red_dims)) + kernel_header(name, wide ? "1024" : "256") +
                  "  grape_row_norm_rows<Ops>(p);\n}\n";
  if (wide) cluster_wide_rows(r, L);
  return s;
}

// Inclusive scan (jit/kernels/scan.cuh).
std::string cumsum(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  DType ot = c.type(out).dtype;
  bool fl = is_float(ot);
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string ops = "struct Ops {\n";
  ops += std::string("  using Acc = ") + (fl ? "float" : "long long") + ";\n";
  Idx kept = row_ops(c, x, r, c.numel(r.red_dims), "Acc", ops);
  std::string code;
  Idx red = c.unravel("j", r.red_dims, code, "    ");
  code += c.emit_output(join(r, kept, red),
                        fl ? round_to(ot, "acc") : (ot == DType::I32 ? "grape_to_i32(acc)" : "acc"), "    ");
  ops += "  __device__ static void out(const KParams* p, const Row& r, long long j, Acc acc) {\n" + code +
         "  }\n};\n\n";
  std::string s = ops + kernel_header(name) + block_per_row("grape_cumsum_row<Ops>");
  c.templates = {"scan.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  return s;
}

// The Ops of jit/kernels/topk.cuh: the row (row_ops) and out(row, t, value, index), output t's
// stores.
std::string topk_ops(Ctx& c, const RowSpace& r, const std::string& prefix) {
  const ir::Operation& op = *c.g.root;
  ValueId x = op.operands[0], vals = op.results[0], inds = op.results[1];
  DType xt = c.type(x).dtype;
  std::string ops = "struct Ops {\n" + prefix;
  ops += std::string("  using T = ") + (is_float(xt) ? "float" : "long long") + ";\n";
  Idx kept = row_ops(c, x, r, c.numel(r.red_dims), "T", ops);
  Idx oidx = join(r, kept, {"t"});
  std::string sv = is_float(xt) ? "bv" : (xt == DType::I32 ? "grape_to_i32(bv)" : "bv");
  ops += "  __device__ static void out(const KParams* p, const Row& r, long long t, T bv, long long bi) {\n";
  ops += "    " + c.store(vals, oidx, sv) + "\n";
  ops += "    " + c.store(inds, oidx, "(int)bi") + "\n";
  return ops + "  }\n};\n\n";
}

// The topk of k <= GRAPE_TOPK_MAX_K (jit/kernels/topk.cuh): one pass over the row, each thread
// keeping its best k in registers, then k block-wide merges; a block of 512 threads per row, or
// per part of a float row split over blocks (LaunchDims::splits).
std::string topk_one_pass(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.root;
  ValueId x = op.operands[0];
  bool fl = is_float(c.type(x).dtype);
  RowSpace r = row_space(c, x, {op.attrs.axis});
  const std::string targs = "<Ops, " + std::to_string(op.attrs.k) + ", " + std::to_string(kTopKUnroll) + ">";
  std::string s = topk_ops(c, r, "") + kernel_header(name, std::to_string(kTopKThreads));
  if (fl) {
    s += "  const long long items = Ops::rows(p) * (p->splits > 1 ? p->splits : 1);\n";
    s += "  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_topk_one_pass_keys" +
         targs + "(p, item);\n}\n";
  } else {
    s += block_per_row("grape_topk_one_pass_list" + targs);
  }
  c.templates = {"topk.cuh"};
  L.kind = LaunchRule::Rows;
  L.threads = kTopKThreads;
  L.items = r.kept_dims;
  if (fl) {
    L.topk_k = static_cast<int>(op.attrs.k);
    ir::Dim len = 1;
    for (const ir::Dim& d : r.red_dims) len = len * d;
    L.row_len = len;
  }
  return s;
}

// k passes of a block-wide selection of the next element in topk order after the previous one
// (k > GRAPE_TOPK_MAX_K; jit/kernels/topk.cuh, grape_topk_passes).
std::string topk(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.root;
  if (op.attrs.k <= kTopKOnePassMaxK) return topk_one_pass(c, name, L);
  RowSpace r = row_space(c, op.operands[0], {op.attrs.axis});
  std::string s = topk_ops(c, r, "  static constexpr long long kK = " + std::to_string(op.attrs.k) + ";\n") +
                  kernel_header(name) + block_per_row("grape_topk_passes<Ops>");
  c.templates = {"topk.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  return s;
}

// ---- slice_update (jit/kernels/slice_update.cuh) -----------------------------------------------
// The Ops struct (named `ops_name`) of one slice_update `op` of the group; `in_place` says which
// entry it is written for, `items` its work items.
std::string slice_update_ops(Ctx& c, const ir::Operation& op, const std::string& ops_name, bool& in_place,
                             std::vector<ir::Dim>& work) {
  ValueId x = op.operands[0], val = op.operands[1], out = op.results[0];
  const auto& xs = c.type(x).shape;
  // In place unless x is also read by the value or the indices (then a copy kernel). The value
  // may read x's own region (a slice with the same starts: ir/passes/narrow_updates.h writes the
  // old slice back where a predicate is false): each thread reads an element before it writes it.
  in_place = true;
  for (size_t i = 1; i < op.operands.size(); ++i) in_place = in_place && op.operands[i] != x;
  for (const ir::Operation* m : c.g.ops)
    if (m != &op && !scheduler::reads_update_region(op, *m))
      for (ValueId u : m->operands) in_place = in_place && u != x;
  const std::string T = reg_type(c.type(out).dtype);
  // Ops::starts: the dynamic starts, resolved once per thread.
  std::string ops = "struct " + ops_name + " {\n";
  std::string code, fields, init;
  std::vector<std::string> starts;
  for (size_t d = 0; d < xs.size(); ++d) {
    const ir::SliceAxis& sa = op.attrs.slices[d];
    if (sa.dynamic >= 0) {
      const std::string st =
          c.dynamic_start(op.operands[static_cast<size_t>(sa.dynamic)], xs[d], sa.size, code, "    ");
      fields += (fields.empty() ? "" : ", ") + st;
      init += (init.empty() ? "" : ", ") + st;
      starts.push_back("s." + st);
    } else {
      starts.push_back(c.dim(sa.start));
    }
  }
  ops += fields.empty() ? "  struct Starts {};\n" : "  struct Starts { long long " + fields + "; };\n";
  ops += "  __device__ static Starts starts(" + params_arg(code) + ") {\n" + code + "    return Starts{" +
         init + "};\n  }\n";
  // Ops::at: work item gi's indices (At: the region's index r; for a copy, out's index o first);
  // Ops::inside: whether it is in the region (copy) or in x (in place). Ops::store's index is
  // out's: in place, start + step * r, written out in store itself so that Ctx::buffer_offset sees
  // a constant leading start (a layer of a stacked cache).
  std::vector<ir::Dim> region;
  for (const auto& sa : op.attrs.slices) region.push_back(sa.size);
  const std::vector<ir::Dim>& items = in_place ? region : xs;
  Idx r_fields, o_fields;
  for (size_t d = 0; d < xs.size(); ++d) {
    r_fields.push_back("a.r" + std::to_string(d));
    o_fields.push_back("a.o" + std::to_string(d));
  }
  std::string at, inside = "true";
  Idx fields_init, sq, out_idx;  // sq: the value's index (the region's, without squeezed axes)
  if (in_place) {
    Idx ri = c.unravel("gi", region, at, "    ");
    for (size_t d = 0; d < xs.size(); ++d) {
      const ir::SliceAxis& sa = op.attrs.slices[d];
      auto x_index = [&](const std::string& r) {
        return "(" + starts[d] + " + " + std::to_string(sa.step) + "LL * " + r + ")";
      };
      // A static axis whose whole range is known to fit needs no test (and a layer's number in
      // the test would keep the layers' kernels apart; Ctx::buffer_offset).
      const bool fits = slice_axis_fits(sa, xs[d]);
      if (!fits) inside += " && " + x_index(r_fields[d]) + " < " + c.dim(xs[d]);
      fields_init.push_back(ri[d]);
      out_idx.push_back(x_index(r_fields[d]));
      if (!sa.squeeze) sq.push_back(r_fields[d]);
    }
  } else {
    // Every element of out: the value inside the region, x elsewhere (disjoint writes, out != x).
    Idx oi = c.unravel("gi", xs, at, "    ");
    fields_init = oi;
    out_idx = o_fields;
    for (size_t d = 0; d < xs.size(); ++d) {
      const ir::SliceAxis& sa = op.attrs.slices[d];
      std::string rd = c.fresh("r");
      at += "    const long long " + rd + " = " + oi[d] + " - " + starts[d] + ";\n";
      fields_init.push_back(rd);
      std::string step = std::to_string(sa.step) + "LL";
      const std::string& rf = r_fields[d];
      inside += " && " + rf + " >= 0 && " + rf + " % " + step + " == 0 && " + rf + " / " + step + " < " +
                c.dim(sa.size);
      if (!sa.squeeze) sq.push_back("(" + rf + " / " + step + ")");
    }
  }
  Idx names = r_fields;
  if (!in_place) names.insert(names.begin(), o_fields.begin(), o_fields.end());
  std::string decl, init_list;
  for (const std::string& f : names) decl += (decl.empty() ? "" : ", ") + f.substr(2);  // a.r0: r0
  for (const std::string& f : fields_init) init_list += (init_list.empty() ? "" : ", ") + f;
  ops += xs.empty() ? "  struct At {};\n" : "  struct At { long long " + decl + "; };\n";
  ops += "  __device__ static long long n(" + params_arg(c.numel(items)) + ") { return " + c.numel(items) +
         "; }\n";
  ops += "  __device__ static At at(const KParams* p, const Starts& s, long long gi) {\n" + at +
         "    return At{" + init_list + "};\n  }\n";
  ops += "  __device__ static bool inside(const KParams* p, const Starts& s, const At& a) { return " +
         inside + "; }\n";
  {
    std::string vcode;
    std::string v = c.value(val, c.broadcast_index(val, sq), vcode, "    ");
    ops += "  __device__ static " + T + " value(const KParams* p, const At& a) {\n" + vcode + "    return " +
           v + ";\n  }\n";
  }
  if (!in_place)
    ops += "  __device__ static " + T + " x(const KParams* p, const At& a) { return " + c.load(x, o_fields) +
           "; }\n";
  ops += "  __device__ static void store(const KParams* p, const Starts& s, const At& a, " + T +
         " v) {\n    " + c.store(out, out_idx, "v") + "\n  }\n};\n\n";
  work = items;
  return ops;
}

// A group of sibling updates (FusionGroup::parts) is one kernel over all of their work items, the
// parts' one after another (Ops0, Ops1, ...); a single update's struct is Ops.
std::string slice_update(Ctx& c, const std::string& name, LaunchRule& L) {
  std::vector<const ir::Operation*> updates;
  for (const auto& part : c.g.parts) updates.push_back(part.root);
  if (updates.empty()) updates.push_back(c.g.root);
  const bool single = updates.size() == 1;
  std::string ops, entry, loop;
  ir::Dim total = 0;
  for (size_t i = 0; i < updates.size(); ++i) {
    const ir::Operation& op = *updates[i];
    const std::string id = single ? "" : std::to_string(i);
    const std::string O = "Ops" + id;
    bool in_place = false;
    std::vector<ir::Dim> items;
    ops += slice_update_ops(c, op, O, in_place, items);
    if (in_place) c.in_place_updates.push_back({op.results[0], op.operands[0]});
    ir::Dim n = 1;
    for (const ir::Dim& d : items) n = n * d;
    total = total + n;
    const std::string call = std::string("grape_slice_update_") + (in_place ? "in_place" : "copy") + "<" + O +
                             ">(p, s" + id + ", ";
    entry += "  const " + O + "::Starts s" + id + " = " + O + "::starts(p);\n  const long long n" + id +
             " = " + O + "::n(p);\n";
    if (single) {
      loop = "\n    " + call + "gi);\n";
      L.items = items;
      continue;
    }
    // Part i's work items follow the parts' before it: gi - b<i>, b<i> = n0 + ... + n<i-1>.
    if (i > 0) {
      const std::string prev = std::to_string(i - 1);
      entry += "  const long long b" + id + " = " +
               (i == 1 ? std::string("n0") : "b" + prev + " + n" + prev) + ";\n";
    }
    if (i == 0)
      loop += "    if (gi < n0) ";
    else if (i + 1 < updates.size())
      loop += "    else if (gi < b" + id + " + n" + id + ") ";
    else
      loop += "    else ";
    loop += call + (i == 0 ? std::string("gi") : "gi - b" + id) + ");\n";
  }
  if (scheduler::update_launch_dependents_early()) entry = "  GRAPE_RELEASE_AT_START();\n" + entry;
  std::string s = ops + kernel_header(name) + entry;
  if (single) {
    s += "  " + std::string(kGridStride) + loop + "}\n";
  } else {
    const std::string last = std::to_string(updates.size() - 1);
    s += "  const long long n = b" + last + " + n" + last + ";\n  " + std::string(kGridStride) + " {\n" +
         loop + "  }\n}\n";
    L.items = {total};
  }
  c.templates = {"slice_update.cuh"};
  L.kind = LaunchRule::Elementwise;
  return s;
}

}  // namespace

std::string emit_kernel_body(Ctx& c, const std::string& name, LaunchRule& L) {
  L.threads = 256;
  const ir::Operation* core = c.g.core;
  if (!core) return pointwise(c, name, L);
  switch (core->op) {
    case Op::Sum:
    case Op::Mean:
    case Op::Max:
    case Op::Min:
    case Op::Prod:
    case Op::All:
    case Op::Any: return reduce(c, name, L);
    case Op::ArgMax:
    case Op::ArgMin: return arg_reduce(c, name, L);
    case Op::Softmax:
    case Op::LogSoftmax:
    case Op::LayerNorm:
    case Op::RmsNorm: return norm(c, name, L);
    case Op::CumSum: return cumsum(c, name, L);
    case Op::TopK: return topk(c, name, L);
    case Op::SliceUpdate: return slice_update(c, name, L);
    case Op::MatMul:
    case Op::Linear:
      return c.g.attention_scores ? attention_kernel(c, name, L) : matrix_product_kernel(c, name, L);
    default: throw std::logic_error(std::string("no CUDA kernel for ") + ir::op_name(core->op));
  }
}

}  // namespace grape::jit::detail
