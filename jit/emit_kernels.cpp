// Kernel bodies by the shape of their work: pointwise (grid-stride over elements), row kernels
// (reductions, arg-reductions, softmax, layer/rms norm, cumsum, topk: one block per row, block
// reductions with warp shuffles), slice_update (in place over the region), fused attention, and
// matrix products (the templates of jit/kernels/ for f16/bf16 weights, SIMT/WMMA tiles otherwise).
#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "jit/emit_context.h"
#include "scheduler/fusion.h"
#include "scheduler/launch.h"

namespace grape::jit::detail {

using ir::Op;
using ir::ValueId;

namespace {

const char* kGridStride =
    "for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long "
    "long)gridDim.x * blockDim.x)";

}  // namespace

std::string kernel_header(const std::string& name, const std::string& bounds) {
  // The block is a kernel parameter (__grid_constant__: read in place from the parameter bank
  // through the constant cache, no copy), so reading it costs no dependent global load at the
  // kernel's start; the bodies take `const KParams*` as before. GRAPE_GRID_WAIT
  // (grid_dependency.cuh) comes first: a kernel launched behind a programmatic graph edge touches nothing
  // before its predecessor has finished. Whether it lets its successor launch at once or only as
  // its blocks exit is scheduler::launch_dependents_early.
  std::string s = "extern \"C\" __global__ void __launch_bounds__(" + bounds + ") " + name +
                  "(const __grid_constant__ KParams kp) {\n  GRAPE_GRID_WAIT();\n";
  if (scheduler::launch_dependents_early()) s += "  GRAPE_LAUNCH_DEPENDENTS();\n";
  s += "  const KParams* const p = &kp;\n";
  // Every kernel checks the predicate, not only predicated ones: p->pred is null for the others
  // (DeviceProgram::fill_blocks), and the same source in a predicated and an unpredicated position
  // (a layer inside and outside an `if`) is then one kernel, built once. The cost is one uniform
  // branch on a parameter.
  s += "  if (p->pred && !*p->pred) return;\n";
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

// x evaluated at (row index vars, j): statements into code, returns the register.
std::string row_elem(Ctx& c, ValueId x, const RowSpace& r, const Idx& kept, const std::string& j,
                     std::string& code, const std::string& ind, Idx* full = nullptr) {
  Idx red = c.unravel(j, r.red_dims, code, ind);
  Idx ix = join(r, kept, red);
  if (full) *full = ix;
  return c.value(x, ix, code, ind);
}

std::string rows_prologue(Ctx& c, const RowSpace& r, std::string& s, Idx& kept) {
  s += "  const long long rows = " + c.numel(r.kept_dims) + ", cnt = " + c.numel(r.red_dims) + ";\n";
  s += "  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {\n";
  kept = c.unravel("row", r.kept_dims, s, "    ");
  return "    ";
}

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
      comb = "GrapeAdd()";
      break;
    case Op::Prod:
      init = fl ? "1.0f" : "1LL";
      comb = "GrapeMul()";
      break;
    case Op::Max:
      init = fl ? "-__int_as_float(0x7f800000)" : "(-9223372036854775807LL - 1)";
      comb = "GrapeMax()";
      break;
    case Op::Min:
      init = fl ? "__int_as_float(0x7f800000)" : "9223372036854775807LL";
      comb = "GrapeMin()";
      break;
    case Op::All:
      init = "1";
      comb = "GrapeAnd()";
      break;
    case Op::Any:
      init = "0";
      comb = "GrapeOr()";
      break;
    default: throw std::logic_error("not a reduction");
  }
  std::string s = kernel_header(name);
  s += "  __shared__ " + acc_t + " sm[32];\n";
  Idx kept;
  std::string ind = rows_prologue(c, r, s, kept);
  s += ind + acc_t + " acc = " + init + ";\n";
  s += ind + "for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {\n";
  std::string code;
  std::string v = row_elem(c, x, r, kept, "j", code, ind + "  ");
  s += code + ind + "  acc = " + comb + "(acc, (" + acc_t + ")" + v + ");\n" + ind + "}\n";
  s += ind + "acc = grape_block_reduce(acc, " + comb + ", sm);\n";
  s += ind + "if (threadIdx.x == 0) {\n";
  std::string fin;
  if (logical)
    fin = "(acc != 0)";
  else if (op.op == Op::Mean)
    fin = round_to(ot, "(acc / (float)cnt)");  // mean of nothing: NaN
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
  s += c.emit_output(oidx, fin, ind + "  ");
  s += ind + "}\n  }\n}\n";
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  return s;
}

std::string arg_reduce(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0];
  bool fl = is_float(c.type(x).dtype);
  std::string vt = fl ? "float" : "long long";
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string s = kernel_header(name);
  s += "  __shared__ " + vt + " smv[32];\n  __shared__ long long smi[32];\n";
  std::string cmp = op.op == Op::ArgMax ? "true" : "false";
  s += "  auto before = [](" + vt + " a, long long ia, " + vt +
       " b, long long ib) { return grape_arg_first(a, ia, b, ib, " + cmp + "); };\n";
  Idx kept;
  std::string ind = rows_prologue(c, r, s, kept);
  s += ind + vt + " bv = 0; long long bi = -1;\n";
  s += ind + "for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {\n";
  std::string code;
  std::string v = row_elem(c, x, r, kept, "j", code, ind + "  ");
  s += code + ind + "  if (before((" + vt + ")" + v + ", j, bv, bi)) { bv = (" + vt + ")" + v +
       "; bi = j; }\n" + ind + "}\n";
  s += ind + "grape_block_best(bv, bi, before, smv, smi);\n";
  s += ind + "if (threadIdx.x == 0) {\n";
  Idx oidx;
  for (size_t d = 0, k = 0; d < c.type(x).rank(); ++d) {
    if (static_cast<int64_t>(d) != op.attrs.axis)
      oidx.push_back(kept[k++]);
    else if (op.attrs.keepdims)
      oidx.push_back("0LL");
  }
  s += c.emit_output(oidx, "(int)(bi < 0 ? 0 : bi)", ind + "  ");
  s += ind + "}\n  }\n}\n";
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
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

// The longest rows the warp-per-row template (jit/kernels/row_norm.cuh) takes: 32 registers of
// values per lane. Its rows per block (GRAPE_ROW_NORM_WARPS there).
constexpr int64_t kRowNormWarpMaxCols = 32 * 32;
// Rows at least this long (and of known length) take the block-per-row kernel with 1024 threads.
constexpr int64_t kRowNormWideBlockMinCols = 8192;
constexpr int kRowNormWarps = 4;

// Rows of a constant length up to kRowNormWarpMaxCols: the glue of jit/kernels/row_norm.cuh, an Ops
// struct with the fused input x(row, j) and the output out(row, j, y).
std::string norm_warp_rows(Ctx& c, const std::string& name, LaunchRule& L, const RowSpace& r) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  const int64_t cols = r.red_dims[0].const_value();
  const char* kind = op.op == Op::Softmax      ? "kGrapeSoftmax"
                     : op.op == Op::LogSoftmax ? "kGrapeLogSoftmax"
                     : op.op == Op::LayerNorm  ? "kGrapeLayerNorm"
                                               : "kGrapeRmsNorm";
  // Read-only loads (emit_context.h): out's gamma and beta loads may then be issued ahead of the
  // stores of the row's earlier elements instead of one store's latency apart.
  c.readonly_inputs = true;
  const bool affine = op.op == Op::LayerNorm || op.op == Op::RmsNorm;  // gamma (and beta), an epsilon
  const std::string eps = f32_decimal(affine ? op.attrs.eps : 0.0);
  std::string ops = "struct Ops {\n";
  ops += std::string("  static constexpr int kKind = ") + kind + ";\n";
  ops += std::string("  static constexpr float kEps = ") + eps + ";\n";
  ops += "  __device__ static long long rows(const KParams* p) { return " + c.numel(r.kept_dims) + "; }\n";
  ops += "  __device__ static long long cnt(const KParams*) { return " + std::to_string(cols) + "LL; }\n";
  // The row's kept indices, unravelled once per row (Ops::row): x and out then do only the column's
  // index arithmetic. Unravelled in out, a row's 64-bit divisions were redone for every element,
  // since the compiler cannot keep p->shape in registers across out's global stores.
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
  {
    std::string code;
    std::string v = row_elem(c, x, r, kept_fields, "j", code, "    ");
    ops += "  __device__ static float x(const KParams* p, const Row& r, long long j) {\n" + code +
           "    return " + v + ";\n  }\n";
  }
  {
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
  }
  ops += "};\n\n";
  const int per_lane = static_cast<int>((cols + 31) / 32);
  std::string s = ops + kernel_header(name, std::to_string(32 * kRowNormWarps));
  s += "  grape_row_norm<Ops, " + std::to_string(per_lane) + ">(p);\n}\n";
  c.templates = {"row_norm.cuh"};
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  L.rows_per_block = kRowNormWarps;
  L.threads = 32 * kRowNormWarps;
  return s;
}

// softmax / log_softmax over one axis, layer_norm / rms_norm over the last (runtime/cpu/norm.cpp).
std::string norm(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  DType ot = c.type(out).dtype;
  bool sm = op.op == Op::Softmax || op.op == Op::LogSoftmax;
  int64_t axis = sm ? op.attrs.axis : static_cast<int64_t>(c.type(x).rank()) - 1;
  RowSpace r = row_space(c, x, {axis});
  if (r.red_dims.size() == 1 && r.red_dims[0].is_const() && r.red_dims[0].const_value() >= 1 &&
      r.red_dims[0].const_value() <= kRowNormWarpMaxCols)
    return norm_warp_rows(c, name, L, r);
  // Longer or runtime-length rows: one block per row, a pass over x per statistic (softmax: one
  // pass for both, below). A long row of known length gets 1024 threads: one block must keep
  // enough loads in flight to read it at a useful rate (a beam search's 5 rows of 50257: 72 us
  // with 256 threads and three passes).
  const bool wide = r.red_dims.size() == 1 && r.red_dims[0].is_const() &&
                    r.red_dims[0].const_value() >= kRowNormWideBlockMinCols;
  std::string s = kernel_header(name, wide ? "1024" : "256");
  s += "  __shared__ float sm[32];\n";
  Idx kept;
  std::string ind = rows_prologue(c, r, s, kept);
  auto pass = [&](const std::string& acc_update) {
    std::string code;
    std::string v = row_elem(c, x, r, kept, "j", code, ind + "  ");
    std::string u = acc_update;
    for (size_t pos; (pos = u.find("$x")) != std::string::npos;) u.replace(pos, 2, v);
    s += ind + "for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {\n" + code + ind + "  " + u +
         "\n" + ind + "}\n";
  };
  if (sm) {
    // Each thread keeps the largest element it has seen and the sum of exp(x - that), rescaled
    // when the maximum grows (so x is read once for both); the block's maximum, then each
    // thread's sum rescaled to it. -inf elements add exp(-inf) = 0 and are skipped, so a thread
    // that saw nothing else keeps a sum of 0 and adds 0, not 0 * exp(-inf - -inf) = NaN; a row of
    // only -inf still comes out NaN (0 / 0, log 0 - NaN), and a NaN or +inf anywhere makes the
    // maximum or the sum NaN, as the CPU's two passes do.
    s += ind + "float tmx = -__int_as_float(0x7f800000), tsum = 0.0f;\n";
    pass(
        "{ const float xv = $x; if (xv != -__int_as_float(0x7f800000)) { "
        "const float nm = grape_fmax_nan(tmx, xv); "
        "tsum = (tsum == 0.0f ? 0.0f : tsum * expf(tmx - nm)) + expf(xv - nm); tmx = nm; } }");
    s += ind + "const float mx = grape_block_reduce(tmx, GrapeMax(), sm);\n";
    s += ind +
         "float sum = grape_block_reduce(tsum == 0.0f ? 0.0f : tsum * expf(tmx - mx), GrapeAdd(), sm);\n";
  } else {
    s += ind + "float mean = 0.0f;\n";
    if (op.op == Op::LayerNorm) {
      pass("mean += $x;");
      s += ind + "mean = grape_block_reduce(mean, GrapeAdd(), sm) / (float)cnt;\n";
    }
    s += ind + "float sq = 0.0f;\n";
    pass("{ const float d = $x - mean; sq += d * d; }");
    s += ind + "sq = grape_block_reduce(sq, GrapeAdd(), sm);\n";
    s += ind + "const float inv = 1.0f / sqrtf(sq / (float)cnt + " + f32_decimal(op.attrs.eps) + ");\n";
  }
  std::string code;
  Idx full;
  std::string v = row_elem(c, x, r, kept, "j", code, ind + "  ", &full);
  std::string res;
  if (op.op == Op::Softmax)
    res = "expf(" + v + " - mx) / sum";
  else if (op.op == Op::LogSoftmax)
    res = "(" + v + " - mx) - logf(sum)";
  else {
    std::string gv = c.value(op.operands[1], {full.back()}, code, ind + "  ");
    res = "(" + v + " - mean) * inv * " + gv;
    if (op.op == Op::LayerNorm) res += " + " + c.value(op.operands[2], {full.back()}, code, ind + "  ");
  }
  s += ind + "for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {\n" + code;
  s += c.emit_output(full, round_to(ot, "(" + res + ")"), ind + "  ");
  s += ind + "}\n  }\n}\n";
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  if (wide) L.threads = 1024;
  return s;
}

// Inclusive scan; one thread per row walks the axis serially (runtime/cpu/reduce.cpp cumsum).
std::string cumsum(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.core;
  ValueId x = op.operands[0], out = op.results[0];
  DType ot = c.type(out).dtype;
  bool fl = is_float(ot);
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string s = kernel_header(name);
  Idx kept;
  std::string ind = rows_prologue(c, r, s, kept);
  s += ind + "if (threadIdx.x != 0) continue;\n";
  s += ind + (fl ? "float acc = 0.0f;\n" : "long long acc = 0;\n");
  std::string code;
  Idx full;
  std::string v = row_elem(c, x, r, kept, "j", code, ind + "  ", &full);
  s += ind + "for (long long j = 0; j < cnt; ++j) {\n" + code;
  s += ind + "  acc = grape_plus(acc, (" + std::string(fl ? "float" : "long long") + ")" + v + ");\n";
  s += c.emit_output(full, fl ? round_to(ot, "acc") : (ot == DType::I32 ? "grape_to_i32(acc)" : "acc"),
                     ind + "  ");
  s += ind + "}\n  }\n}\n";
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  return s;
}

// The topk of k <= GRAPE_TOPK_MAX_K (jit/kernels/topk.cuh): one pass over the row, each thread
// keeping its best k in registers, then k block-wide merges; a block of 512 threads per row.
std::string topk_one_pass(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.root;
  ValueId x = op.operands[0], vals = op.results[0], inds = op.results[1];
  bool fl = is_float(c.type(x).dtype);
  std::string vt = fl ? "float" : "long long";
  std::string k = std::to_string(op.attrs.k);
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string s = kernel_header(name, std::to_string(kTopKThreads));
  Idx kept;
  std::string ind;
  if (fl) {
    // Float rows may be split over blocks (LaunchDims::splits): block item = (row, part).
    s += "  const long long rows = " + c.numel(r.kept_dims) + ", cnt = " + c.numel(r.red_dims) + ";\n";
    s += "  const long long splits = p->splits > 1 ? p->splits : 1, per = (cnt + splits - 1) / splits;\n";
    s += "  unsigned* const counters = (unsigned*)p->scratch;\n";
    s += "  unsigned long long* const keys = (unsigned long long*)((char*)p->scratch + 8 * rows);\n";
    s += "  for (long long item = blockIdx.x; item < rows * splits; item += gridDim.x) {\n";
    s += "    const long long row = item / splits, part = item % splits;\n";
    s += "    const long long lo = part * per, hi = grape_min_ll(cnt, lo + per);\n";
    kept = c.unravel("row", r.kept_dims, s, "    ");
    ind = "    ";
    s += ind + "GrapeTopKKeys<" + k + "> l;\n" + ind + "l.init();\n" + ind + "unsigned long long thr = 0;\n";
  } else {
    s += "  __shared__ long long smv[32];\n  __shared__ long long smi[32];\n";
    ind = rows_prologue(c, r, s, kept);
    s += ind + "const long long lo = 0, hi = cnt;\n";
    s += ind + "GrapeTopKList<long long, " + k + "> l;\n" + ind + "l.init();\n";
  }
  // kTopKUnroll elements per thread and step, all loaded before any is offered (16 measured no
  // faster than 8: 144 against 145 us for 251k floats on one block of an H100, where ncu shows the
  // block issue-bound, 611k warp instructions at 2.2 per cycle: hence the split over blocks). Float
  // rows step a warp at a time (jw is the same on its lanes: the offer step ends with a warp
  // shuffle).
  const std::string u = std::to_string(kTopKUnroll);
  s += ind + "for (long long jw = lo + threadIdx.x - (threadIdx.x & 31); jw < hi; jw += " + u +
       "LL * blockDim.x) {\n";
  s += ind + "  const long long jb = jw + (threadIdx.x & 31);\n";
  s += ind + "  " + vt + " xs[" + u + "];\n";
  s += ind + "#pragma unroll\n" + ind + "  for (int q = 0; q < " + u + "; ++q) {\n";
  s += ind + "    const long long j = jb + (long long)q * blockDim.x;\n";
  s += ind + "    if (j < hi) {\n";
  std::string code;
  std::string v = row_elem(c, x, r, kept, "j", code, ind + "      ");
  s += code + ind + "      xs[q] = (" + vt + ")" + v + ";\n" + ind + "    }\n" + ind + "  }\n";
  if (fl) {
    s += ind + "  grape_topk_offer_step<" + k + ", " + u + ">(l, thr, xs, jb, blockDim.x, hi);\n";
  } else {
    s += ind + "#pragma unroll\n" + ind + "  for (int q = 0; q < " + u + "; ++q)\n";
    s += ind +
         "    if (jb + (long long)q * blockDim.x < hi) l.offer(xs[q], jb + (long long)q * blockDim.x);\n";
  }
  s += ind + "}\n";
  Idx oidx = join(r, kept, {"t"});
  DType xt = c.type(x).dtype;
  if (fl) {
    s += ind + "if (splits > 1 && !grape_topk_gather_parts(l, " + k +
         ", splits, keys + (row * splits + part) * " + k + ", keys + row * splits * " + k +
         ", counters + 2 * row)) continue;\n";
    s += ind + "grape_topk_merge_keys(l, " + k + ", [&](long long t, unsigned long long key) {\n";
    s += ind + "  const float bv = grape_topk_key_value(key);\n";
    s += ind + "  const long long bi = grape_topk_key_index(key);\n";
  } else {
    s += ind + "grape_topk_merge(l, " + k + ", smv, smi, [&](long long t, long long bv, long long bi) {\n";
  }
  std::string sv = fl ? "bv" : (xt == DType::I32 ? "grape_to_i32(bv)" : "bv");
  s += ind + "  " + c.store(vals, oidx, sv) + "\n";
  s += ind + "  " + c.store(inds, oidx, "(int)bi") + "\n";
  s += ind + "});\n  }\n}\n";
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
// (k > GRAPE_TOPK_MAX_K).
std::string topk(Ctx& c, const std::string& name, LaunchRule& L) {
  const ir::Operation& op = *c.g.root;
  if (op.attrs.k <= kTopKOnePassMaxK) return topk_one_pass(c, name, L);
  ValueId x = op.operands[0], vals = op.results[0], inds = op.results[1];
  bool fl = is_float(c.type(x).dtype);
  std::string vt = fl ? "float" : "long long";
  RowSpace r = row_space(c, x, {op.attrs.axis});
  std::string s = kernel_header(name);
  s += "  __shared__ " + vt + " smv[32];\n  __shared__ long long smi[32];\n";
  s += "  auto before = [](" + vt + " a, long long ia, " + vt +
       " b, long long ib) { return grape_topk_before(a, ia, b, ib); };\n";
  Idx kept;
  std::string ind = rows_prologue(c, r, s, kept);
  s += ind + vt + " pv = 0; long long pi = -1;\n";
  s += ind + "for (long long t = 0; t < " + std::to_string(op.attrs.k) + "LL; ++t) {\n";
  std::string ind2 = ind + "  ";
  s += ind2 + vt + " bv = 0; long long bi = -1;\n";
  s += ind2 + "for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {\n";
  std::string code;
  std::string v = row_elem(c, x, r, kept, "j", code, ind2 + "  ");
  s += code + ind2 + "  const " + vt + " xv = (" + vt + ")" + v + ";\n";
  s += ind2 + "  if ((pi < 0 || before(pv, pi, xv, j)) && before(xv, j, bv, bi)) { bv = xv; bi = j; }\n" +
       ind2 + "}\n";
  s += ind2 + "grape_block_best(bv, bi, before, smv, smi);\n";
  s += ind2 + "pv = bv; pi = bi;\n";
  s += ind2 + "if (threadIdx.x == 0 && bi >= 0) {\n";
  Idx oidx = join(r, kept, {"t"});
  DType xt = c.type(x).dtype;
  std::string sv = fl ? "bv" : (xt == DType::I32 ? "grape_to_i32(bv)" : "bv");
  s += ind2 + "  " + c.store(vals, oidx, sv) + "\n";
  s += ind2 + "  " + c.store(inds, oidx, "(int)bi") + "\n";
  s += ind2 + "}\n" + ind + "}\n  }\n}\n";
  L.kind = LaunchRule::Rows;
  L.items = r.kept_dims;
  return s;
}

// ---- slice_update -----------------------------------------------------------------------------
std::string slice_update(Ctx& c, const std::string& name, LaunchRule& L, bool& in_place) {
  const ir::Operation& op = *c.g.root;
  ValueId x = op.operands[0], val = op.operands[1], out = op.results[0];
  const auto& xs = c.type(x).shape;
  // In place unless x is also read by the value or the indices (then a copy kernel). The value
  // may read x's own region (a slice with the same starts: ir/passes/narrow_updates.h writes the
  // old slice back where a predicate is false): each thread reads an element before it writes it.
  auto same_region = [&](const ir::Operation& m) {
    if (m.op != Op::Slice || m.operands.size() + 1 != op.operands.size() || m.operands[0] != x) return false;
    for (size_t i = 1; i < m.operands.size(); ++i)
      if (m.operands[i] != op.operands[i + 1]) return false;
    if (m.attrs.slices.size() != op.attrs.slices.size()) return false;
    for (size_t d = 0; d < m.attrs.slices.size(); ++d) {
      ir::SliceAxis a = m.attrs.slices[d];
      if (a.dynamic >= 0) a.dynamic += 1;
      if (!(a == op.attrs.slices[d])) return false;
    }
    return true;
  };
  in_place = true;
  for (size_t i = 1; i < op.operands.size(); ++i) in_place = in_place && op.operands[i] != x;
  for (const ir::Operation* m : c.g.ops)
    if (m != &op && !same_region(*m))
      for (ValueId u : m->operands) in_place = in_place && u != x;
  std::string s = kernel_header(name);
  std::string body, ind = "    ";
  std::vector<std::string> starts;
  for (size_t d = 0; d < xs.size(); ++d) {
    const ir::SliceAxis& sa = op.attrs.slices[d];
    if (sa.dynamic >= 0) {
      std::string raw = c.value(op.operands[static_cast<size_t>(sa.dynamic)], {}, s, "  ");
      std::string st = c.fresh("ds");
      s += "  const long long " + st + " = grape_dyn_start((long long)" + raw + ", " + c.dim(xs[d]) + ", " +
           c.dim(sa.size) + ");\n";
      starts.push_back(st);
    } else {
      starts.push_back(c.dim(sa.start));
    }
  }
  std::vector<ir::Dim> region;
  for (const auto& sa : op.attrs.slices) region.push_back(sa.size);
  if (in_place) {
    Idx ri = c.unravel("gi", region, body, ind);
    Idx xi, sq;
    std::string ok = "true";
    for (size_t d = 0; d < xs.size(); ++d) {
      const ir::SliceAxis& sa = op.attrs.slices[d];
      xi.push_back("(" + starts[d] + " + " + std::to_string(sa.step) + "LL * " + ri[d] + ")");
      // A static axis whose whole range is known to fit needs no test (and a layer's number in
      // the test would keep the layers' kernels apart; Ctx::buffer_offset).
      const bool fits =
          sa.dynamic < 0 && sa.start.is_const() && sa.size.is_const() && xs[d].is_const() && sa.step > 0 &&
          sa.start.const_value() >= 0 &&
          (sa.size.const_value() == 0 ||
           sa.start.const_value() + (sa.size.const_value() - 1) * sa.step < xs[d].const_value());
      if (!fits) ok += " && " + xi.back() + " < " + c.dim(xs[d]);
      if (!op.attrs.slices[d].squeeze) sq.push_back(ri[d]);
    }
    std::string v = c.value(val, c.broadcast_index(val, sq), body, ind);
    body += ind + "if (" + ok + ") " + c.store(out, xi, v) + "\n";
    s += "  const long long n = " + c.numel(region) + ";\n  " + kGridStride + " {\n" + body + "  }\n}\n";
    L.items = region;
  } else {
    // Every element of out: the value inside the region, x elsewhere (disjoint writes, out != x).
    Idx xi = c.unravel("gi", xs, body, ind);
    std::string in = "true";
    Idx sq;
    std::vector<std::string> rel;
    for (size_t d = 0; d < xs.size(); ++d) {
      const ir::SliceAxis& sa = op.attrs.slices[d];
      std::string rd = c.fresh("r");
      body += ind + "const long long " + rd + " = " + xi[d] + " - " + starts[d] + ";\n";
      std::string step = std::to_string(sa.step) + "LL";
      in += " && " + rd + " >= 0 && " + rd + " % " + step + " == 0 && " + rd + " / " + step + " < " +
            c.dim(sa.size);
      if (!sa.squeeze) sq.push_back("(" + rd + " / " + step + ")");
    }
    body += ind + "if (" + in + ") {\n";
    std::string v = c.value(val, c.broadcast_index(val, sq), body, ind + "  ");
    body += ind + "  " + c.store(out, xi, v) + "\n" + ind + "} else {\n";
    body += ind + "  " + c.store(out, xi, c.load(x, xi)) + "\n" + ind + "}\n";
    s += "  const long long n = " + c.numel(xs) + ";\n  " + kGridStride + " {\n" + body + "  }\n}\n";
    L.items = xs;
  }
  L.kind = LaunchRule::Elementwise;
  return s;
}

}  // namespace

std::string emit_kernel_body(Ctx& c, const std::string& name, LaunchRule& L, bool& in_place) {
  in_place = false;
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
    case Op::SliceUpdate: return slice_update(c, name, L, in_place);
    case Op::MatMul:
    case Op::Linear:
      return c.g.attention_scores ? attention_kernel(c, name, L) : matrix_product_kernel(c, name, L);
    default: throw std::logic_error(std::string("no CUDA kernel for ") + ir::op_name(core->op));
  }
}

}  // namespace grape::jit::detail
