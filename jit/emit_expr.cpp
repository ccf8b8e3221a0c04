// Pointwise expressions: every op that is computed per output element (elementwise math, casts,
// where/select, views, gathers, creators), emitted as straight-line CUDA statements at a
// multi-index. Semantics mirror runtime/cpu/elementwise.cpp, shape.cpp, gather.cpp and create.cpp.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "base/half.h"
#include "jit/emit_context.h"

namespace grape::jit::detail {

using ir::Op;
using ir::ValueId;

const char* reg_type(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::Bool: return "bool";
  }
  return "float";
}

const char* storage_type(DType t) {
  switch (t) {
    case DType::F32: return "float";
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::Bool: return "unsigned char";
  }
  return "float";
}

const char* dtype_tag(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "b8";
  }
  return "f32";
}

std::string round_to(DType t, const std::string& x) {
  if (t == DType::F16) return "grape_r_f16(" + x + ")";
  if (t == DType::BF16) return "grape_r_bf16(" + x + ")";
  return x;
}

namespace {

std::string float_literal(DType t, double v) {
  float f = static_cast<float>(v);
  if (t == DType::F16) f = f16_to_f32(f32_to_f16(f));
  if (t == DType::BF16) f = bf16_to_f32(f32_to_bf16(f));
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  char buf[64];
  std::snprintf(buf, sizeof buf, "__int_as_float(0x%08x)", bits);
  return buf;
}

std::string int_literal(DType t, int64_t v) {
  if (t == DType::Bool) return v ? "true" : "false";
  char buf[64];
  if (t == DType::I32) {
    std::snprintf(buf, sizeof buf, "((int)%lldLL)", static_cast<long long>(static_cast<int32_t>(v)));
  } else {
    std::snprintf(buf, sizeof buf, "((long long)0x%016llxULL)", static_cast<unsigned long long>(v));
  }
  return buf;
}

std::string literal(DType t, double fv, int64_t iv) {
  return is_float(t) ? float_literal(t, fv) : int_literal(t, iv);
}

// Integer results: computed in int64 with wrapping helpers, i32 truncated modulo 2^32.
std::string wrap_int(DType t, const std::string& x) {
  return t == DType::I32 ? "grape_to_i32(" + x + ")" : x;
}

std::string unary_float(Op op, const std::string& x, bool approx_tanh) {
  switch (op) {
    case Op::Neg: return "(-" + x + ")";
    case Op::Abs: return "fabsf(" + x + ")";
    case Op::Exp: return "expf(" + x + ")";
    case Op::Log: return "logf(" + x + ")";
    case Op::Sqrt: return "sqrtf(" + x + ")";
    case Op::Rsqrt: return "(1.0f / sqrtf(" + x + "))";
    case Op::Tanh: return "tanhf(" + x + ")";
    case Op::Sigmoid: return "grape_sigmoid(" + x + ")";
    case Op::Relu: return "grape_relu(" + x + ")";
    case Op::Gelu: return approx_tanh ? "grape_gelu_tanh(" + x + ")" : "grape_gelu(" + x + ")";
    case Op::Silu: return "(" + x + " * grape_sigmoid(" + x + "))";
    case Op::Sin: return "sinf(" + x + ")";
    case Op::Cos: return "cosf(" + x + ")";
    case Op::Floor: return "floorf(" + x + ")";
    case Op::Ceil: return "ceilf(" + x + ")";
    case Op::Round: return "rintf(" + x + ")";  // half to even in the default rounding mode
    case Op::Sign: return "grape_sign_f(" + x + ")";
    default: throw std::logic_error(std::string("no float form for ") + ir::op_name(op));
  }
}

std::string binary_float(Op op, const std::string& a, const std::string& b) {
  switch (op) {
    case Op::Add: return "(" + a + " + " + b + ")";
    case Op::Sub: return "(" + a + " - " + b + ")";
    case Op::Mul: return "(" + a + " * " + b + ")";
    case Op::Div: return "(" + a + " / " + b + ")";
    case Op::Mod: return "grape_fmod_py(" + a + ", " + b + ")";
    case Op::Pow: return "powf(" + a + ", " + b + ")";
    case Op::Maximum: return "grape_fmax_nan(" + a + ", " + b + ")";
    case Op::Minimum: return "grape_fmin_nan(" + a + ", " + b + ")";
    default: throw std::logic_error(std::string("no float form for ") + ir::op_name(op));
  }
}

std::string binary_int(Op op, const std::string& a, const std::string& b) {
  std::string x = "(long long)" + a, y = "(long long)" + b;
  switch (op) {
    case Op::Add: return "grape_add_ll(" + x + ", " + y + ")";
    case Op::Sub: return "grape_sub_ll(" + x + ", " + y + ")";
    case Op::Mul: return "grape_mul_ll(" + x + ", " + y + ")";
    case Op::Div: return "grape_floordiv_ll(" + x + ", " + y + ")";
    case Op::Mod: return "grape_mod_ll(" + x + ", " + y + ")";
    case Op::Pow: return "grape_pow_ll(" + x + ", " + y + ")";
    case Op::Maximum: return "grape_max_ll(" + x + ", " + y + ")";
    case Op::Minimum: return "grape_min_ll(" + x + ", " + y + ")";
    default: throw std::logic_error(std::string("no int form for ") + ir::op_name(op));
  }
}

const char* compare_op(Op op) {
  switch (op) {
    case Op::Eq: return "==";
    case Op::Ne: return "!=";
    case Op::Lt: return "<";
    case Op::Le: return "<=";
    case Op::Gt: return ">";
    case Op::Ge: return ">=";
    case Op::And: return "&&";
    case Op::Or: return "||";
    default: return nullptr;
  }
}

// cast: runtime/cpu/elementwise.cpp cast(): float->int truncates and saturates (NaN -> 0);
// ->bool is x != 0; int->int wraps; bool -> 0/1.
std::string cast_expr(DType from, DType to, const std::string& x) {
  if (to == DType::Bool) return is_float(from) ? "(" + x + " != 0.0f)" : "(" + x + " != 0)";
  if (from == DType::Bool)
    return is_float(to) ? "(" + x + " ? 1.0f : 0.0f)"
                        : "(" + std::string(reg_type(to)) + ")(" + x + " ? 1 : 0)";
  if (is_float(from)) {
    if (is_float(to)) return round_to(to, x);
    return to == DType::I32 ? "grape_f2i32(" + x + ")" : "grape_f2i64(" + x + ")";
  }
  if (is_float(to))
    return round_to(to, from == DType::I32 ? "__int2float_rn(" + x + ")" : "__ll2float_rn(" + x + ")");
  if (to == DType::I32) return "grape_to_i32((long long)" + x + ")";
  return "(long long)" + x;
}

}  // namespace

Ctx::Ctx(const ir::Function& fn, const scheduler::FusionGroup& grp) : f(fn), g(grp) {
  buffers = g.inputs;
  num_inputs = buffers.size();
  buffers.insert(buffers.end(), g.outputs.begin(), g.outputs.end());
  if (buffers.size() > static_cast<size_t>(kMaxBuffers))
    throw std::runtime_error("kernel for " + std::string(ir::op_name(g.root->op)) + " needs " +
                             std::to_string(buffers.size()) + " buffers (at most " +
                             std::to_string(kMaxBuffers) + ")");
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (type(buffers[i]).rank() > static_cast<size_t>(kMaxRank))
      throw std::runtime_error("value of rank " + std::to_string(type(buffers[i]).rank()) +
                               " exceeds the kernel limit");
    if (!buf.count(buffers[i])) buf[buffers[i]] = static_cast<int>(i);
  }
  // Sibling products (FusionGroup::parts): each part's root and core are computed by the kernel's
  // own loops, like the group's.
  auto own = [&](const ir::Operation* op) {
    for (const auto& part : g.parts)
      if (op == part.root || op == part.core) return true;
    for (const auto& fu : g.folded_updates)
      if (op == fu.update) return true;
    return op == g.root || op == g.core || op == g.row_prologue || op == g.attention_scores;
  };
  // A folded update is done in place (scheduler/plan.cpp copies its operand first where the old
  // contents are still needed).
  for (const auto& fu : g.folded_updates)
    in_place_updates.push_back({fu.update->results[0], fu.update->operands[0]});
  for (const ir::Operation* op : g.ops) {
    if (own(op)) continue;
    for (ValueId r : op->results) prod[r] = op;
  }
}

std::string Ctx::dim(const ir::Dim& d) {
  if (d.is_const()) return std::to_string(d.const_value()) + "LL";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const auto& s = type(buffers[i]).shape;
    for (size_t a = 0; a < s.size(); ++a)
      if (s[a] == d) return "p->shape[" + std::to_string(i) + "][" + std::to_string(a) + "]";
  }
  return extra_dim(d);
}

std::string Ctx::extra_dim(const ir::Dim& d) {
  for (size_t i = 0; i < extra.size(); ++i)
    if (extra[i] == d) return "p->extra[" + std::to_string(i) + "]";
  if (extra.size() >= static_cast<size_t>(kMaxExtra))
    throw std::runtime_error("kernel needs more than " + std::to_string(kMaxExtra) + " runtime dims");
  extra.push_back(d);
  return "p->extra[" + std::to_string(extra.size() - 1) + "]";
}

std::string Ctx::numel(const std::vector<ir::Dim>& dims) {
  std::string s;
  for (const auto& d : dims) s += (s.empty() ? "" : " * ") + dim(d);
  return s.empty() ? "1LL" : "(" + s + ")";
}

// A reshape that only splits axes (one input axis becomes several output axes, e.g. E into heads
// x width) or merges them maps each group of axes on its own: a split's input index is a ravel
// (multiplications only), only a merge needs divisions, and only by its own dims. Runtime dims in
// the flat index of a whole-tensor ravel/unravel would cost a 64-bit division per element read.
// Size-1 axes on either side are skipped. False (nothing emitted) when the shapes do not decompose.
namespace {
struct ReshapeGroup {
  size_t i0, i1, o0, o1;  // input axes [i0, i1) <-> output axes [o0, o1)
};

// The groups of Ctx::reshape_by_groups; false when the shapes do not decompose.
bool reshape_groups(const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out,
                    std::vector<ReshapeGroup>& groups) {
  constexpr size_t kMaxGroup = 4;
  size_t i = 0, o = 0;
  auto product = [](const std::vector<ir::Dim>& d, size_t a, size_t b) {
    ir::Dim p = 1;
    for (size_t k = a; k < b; ++k) p = p * d[k];
    return p;
  };
  while (i < in.size() || o < out.size()) {
    if (i < in.size() && in[i].is_const(1) && !(o < out.size() && out[o].is_const(1))) {
      groups.push_back({i, i + 1, o, o});
      ++i;
      continue;
    }
    if (o < out.size() && out[o].is_const(1) && !(i < in.size() && in[i].is_const(1))) {
      ++o;
      continue;
    }
    if (i >= in.size() || o >= out.size()) return false;
    bool found = false;
    for (size_t n = 1; n <= kMaxGroup && o + n <= out.size() && !found; ++n)
      if (product(out, o, o + n) == in[i]) {
        groups.push_back({i, i + 1, o, o + n});
        ++i;
        o += n;
        found = true;
      }
    for (size_t n = 2; n <= kMaxGroup && i + n <= in.size() && !found; ++n)
      if (product(in, i, i + n) == out[o]) {
        groups.push_back({i, i + n, o, o + 1});
        i += n;
        ++o;
        found = true;
      }
    if (!found) return false;
  }
  return true;
}
}  // namespace

bool Ctx::reshape_by_groups(const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out, const Idx& idx,
                            Idx& ix, std::string& code, const std::string& ind) {
  std::vector<ReshapeGroup> groups;
  if (!reshape_groups(in, out, groups)) return false;
  ix.assign(in.size(), "0LL");
  for (const ReshapeGroup& g : groups) {
    if (g.o0 == g.o1) continue;  // a size-1 input axis: index 0
    if (g.i1 - g.i0 == 1) {
      std::vector<ir::Dim> od(out.begin() + static_cast<long>(g.o0), out.begin() + static_cast<long>(g.o1));
      Idx oi(idx.begin() + static_cast<long>(g.o0), idx.begin() + static_cast<long>(g.o1));
      ix[g.i0] = "(" + ravel(od, oi) + ")";
    } else {
      std::vector<ir::Dim> id(in.begin() + static_cast<long>(g.i0), in.begin() + static_cast<long>(g.i1));
      Idx parts = unravel(idx[g.o0], id, code, ind);
      for (size_t k = 0; k < parts.size(); ++k) ix[g.i0 + k] = parts[k];
    }
  }
  return true;
}

std::string Ctx::ravel(const std::vector<ir::Dim>& dims, const Idx& idx) {
  if (dims.empty()) return "0LL";
  for (const auto& h : flat_hints)
    if (h.idx == idx && h.dims == dims) return h.flat;
  std::string s = idx[0];
  for (size_t d = 1; d < dims.size(); ++d) s = "(" + s + ") * " + dim(dims[d]) + " + " + idx[d];
  return s;
}

namespace {

// s without parentheses around the whole of it ("((a) + b)" -> "(a) + b", "(a) * (b)" unchanged).
std::string strip_outer_parens(std::string s) {
  while (s.size() >= 2 && s.front() == '(' && s.back() == ')') {
    int depth = 0;
    size_t close = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth == 0) {
        close = i;
        break;
      }
    }
    if (close != s.size() - 1) break;
    s = s.substr(1, s.size() - 2);
  }
  return s;
}

// An index whose value is a constant c plus a rest: "12LL" (rest "0LL") or "(12LL + 1LL * t3)"
// (rest "(0LL + 1LL * t3)", a static slice starting at 12). Index expressions are integer sums
// and products, so c + rest == c + (0 + rest) whatever rest is. False when the leading term is
// not an integer literal.
bool split_constant_index(const std::string& index, int64_t* c, std::string* rest) {
  const std::string s = strip_outer_parens(index);
  size_t i = s[0] == '-' ? 1 : 0, digits = i;
  while (digits < s.size() && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == i || digits > 18 || s.compare(digits, 2, "LL") != 0) return false;
  const std::string tail = s.substr(digits + 2);
  if (tail.empty()) {
    *rest = "0LL";
  } else if (tail.rfind(" + ", 0) == 0) {
    *rest = "(0LL" + tail + ")";
  } else {
    return false;
  }
  *c = std::stoll(s.substr(0, digits));
  return true;
}

}  // namespace

std::string Ctx::buffer_offset(const std::vector<ir::Dim>& dims, const Idx& idx) {
  // A constant leading index (layer l of a stacked KV cache, `kc[l]` or `kc[l:l+1]`, in an
  // unrolled loop over layers) becomes an extra[] slot holding l times the stride: the twelve layers' kernels
  // are then one source, compiled once, instead of twelve differing in one number (layer 0, with no offset,
  // is a second one: a slot for every slice starting at 0 would cost every kernel a parameter). Two slots are
  // left for the runtime dims the rest of the kernel may need.
  int64_t lead = 0;
  Idx rest = idx;
  if (dims.size() < 2 || dims[0].is_const(1) || extra.size() + 2 >= static_cast<size_t>(kMaxExtra) ||
      !split_constant_index(idx[0], &lead, &rest[0]) || lead == 0)
    return ravel(dims, idx);
  ir::Dim stride = 1;
  for (size_t d = 1; d < dims.size(); ++d) stride = stride * dims[d];
  return "(" + extra_dim(ir::Dim(lead) * stride) + " + " + ravel(dims, rest) + ")";
}

Idx Ctx::unravel(const std::string& flat, const std::vector<ir::Dim>& dims, std::string& code,
                 const std::string& ind) {
  Idx out(dims.size());
  if (dims.empty()) return out;
  std::string t = fresh_unravel("t");
  Unravel u;
  u.names.push_back(t);
  u.lines.push_back(ind + "[[maybe_unused]] long long " + t + " = " + flat + ";\n");
  for (size_t d = dims.size(); d-- > 1;) {
    out[d] = fresh_unravel("i");
    std::string n = dim(dims[d]);
    u.names.push_back(out[d]);
    u.lines.push_back(ind + "[[maybe_unused]] const long long " + out[d] + " = " + t + " % " + n + "; " + t +
                      " /= " + n + ";\n");
  }
  for (const std::string& line : u.lines) code += line;
  unravels.push_back(std::move(u));
  out[0] = t;
  return out;
}

namespace {

bool identifier_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

// Occurrences of identifier `name` in `text` (whole words only: t1 is not in t12).
size_t count_identifier(const std::string& text, const std::string& name) {
  size_t n = 0;
  for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + name.size())) {
    bool starts = at == 0 || !identifier_char(text[at - 1]);
    bool ends = at + name.size() == text.size() || !identifier_char(text[at + name.size()]);
    if (starts && ends) ++n;
  }
  return n;
}

size_t count_substring(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

void erase_all(std::string& text, const std::string& part) {
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at))
    text.erase(at, part.size());
}

}  // namespace

std::string prune_unused_unravels(std::string glue, const std::vector<Ctx::Unravel>& unravels) {
  // An unravel is dead when every use of its variables is inside its own lines (wherever those
  // lines were copied). Dropping one can make an earlier one dead (its variable fed this one's
  // flat index), hence the loop.
  std::vector<bool> gone(unravels.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t u = unravels.size(); u-- > 0;) {
      if (gone[u]) continue;
      const Ctx::Unravel& un = unravels[u];
      bool dead = true;
      for (const std::string& name : un.names) {
        size_t own = 0;
        for (const std::string& line : un.lines)
          own += count_substring(glue, line) * count_identifier(line, name);
        if (count_identifier(glue, name) != own) {
          dead = false;
          break;
        }
      }
      if (!dead) continue;
      for (const std::string& line : un.lines) erase_all(glue, line);
      gone[u] = changed = true;
    }
  }
  return glue;
}

Idx Ctx::broadcast_index(ValueId v, const Idx& idx) {
  const auto& s = type(v).shape;
  Idx out(s.size());
  size_t lead = idx.size() - s.size();
  for (size_t d = 0; d < s.size(); ++d) out[d] = s[d].is_const(1) ? "0LL" : idx[lead + d];
  return out;
}

std::string Ctx::load(ValueId v, const Idx& idx) {
  auto it = buf.find(v);
  if (it == buf.end())
    throw std::logic_error("value %" + std::to_string(v) + " is neither in a buffer nor computed");
  std::string i = std::to_string(it->second);
  return (readonly_inputs ? "grape_ldg_" : "grape_ld_") + std::string(dtype_tag(type(v).dtype)) + "(p->buf[" +
         i + "], " + buffer_offset(type(v).shape, idx) + ")";
}

std::string Ctx::store(ValueId v, const Idx& idx, const std::string& val) {
  std::string i = std::to_string(buf.at(v));
  return "grape_st_" + std::string(dtype_tag(type(v).dtype)) + "(p->buf[" + i + "], " +
         buffer_offset(type(v).shape, idx) + ", " + val + ");";
}

// The index of take's operand x read at the result's `idx` (runtime/cpu/gather.cpp take(): indices
// wrap once, then clamp): the index operand's ri axes become one axis of x.
Idx Ctx::take_index(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind) {
  ValueId x = op.operands[0], ind_v = op.operands[1];
  size_t ax = static_cast<size_t>(op.attrs.axis), ri = type(ind_v).rank();
  Idx ii(idx.begin() + static_cast<long>(ax), idx.begin() + static_cast<long>(ax + ri));
  std::string raw = value(ind_v, ii, code, ind);
  Idx ix(idx.begin(), idx.begin() + static_cast<long>(ax));
  ix.push_back("grape_clamp_index((long long)" + raw + ", " + dim_of(x, ax) + ")");
  ix.insert(ix.end(), idx.begin() + static_cast<long>(ax + ri), idx.end());
  return ix;
}

std::string Ctx::dynamic_start(ValueId raw_start, const ir::Dim& extent, const ir::Dim& size,
                               std::string& code, const std::string& ind) {
  // runtime/cpu/dispatch.cpp resolve_dynamic_start: wrap once, clamp so `size` fits.
  const std::string raw = value(raw_start, {}, code, ind);
  const std::string start = fresh("ds");  // not s0/s1: the row statistics of Ops::a are named so
  code += ind + "const long long " + start + " = grape_dyn_start((long long)" + raw + ", " + dim(extent) +
          ", " + dim(size) + ");\n";
  return start;
}

bool slice_axis_fits(const ir::SliceAxis& sa, const ir::Dim& extent) {
  return sa.dynamic < 0 && sa.start.is_const() && sa.size.is_const() && extent.is_const() && sa.step > 0 &&
         sa.start.const_value() >= 0 &&
         (sa.size.const_value() == 0 ||
          sa.start.const_value() + (sa.size.const_value() - 1) * sa.step < extent.const_value());
}

// The index of a view's operand (expand, permute, reshape, slice) read at the view's `idx`.
Idx Ctx::view_index(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind) {
  const ir::Attrs& a = op.attrs;
  switch (op.op) {
    case Op::Expand: return broadcast_index(op.operands[0], idx);
    case Op::Permute: {
      Idx ix(idx.size());
      for (size_t i = 0; i < a.axes.size(); ++i) ix[static_cast<size_t>(a.axes[i])] = idx[i];
      return ix;
    }
    case Op::Reshape: {
      // runtime/cpu/shape.cpp reshape(): same elements in C order.
      const auto& in = type(op.operands[0]).shape;
      const auto& out = type(op.results[0]).shape;
      Idx ix;
      if (!reshape_by_groups(in, out, idx, ix, code, ind)) ix = unravel(ravel(out, idx), in, code, ind);
      return ix;
    }
    case Op::Slice: {
      ValueId x = op.operands[0];
      const auto& xs = type(x).shape;
      Idx ix(xs.size());
      size_t j = 0;
      for (size_t d = 0; d < xs.size(); ++d) {
        const ir::SliceAxis& s = a.slices[d];
        std::string start;
        if (s.dynamic >= 0) {
          start = dynamic_start(op.operands[static_cast<size_t>(s.dynamic)], xs[d], s.size, code, ind);
        } else {
          start = dim(s.start);
        }
        if (s.squeeze)
          ix[d] = start;
        else
          ix[d] = "(" + start + " + " + std::to_string(s.step) + "LL * " + idx[j++] + ")";
      }
      return ix;
    }
    default: throw std::logic_error(std::string("not a view: ") + ir::op_name(op.op));
  }
}

Idx Ctx::view_result_index(const ir::Operation& op, const Idx& x, std::vector<std::string>& inside,
                           std::string& code, const std::string& ind) {
  switch (op.op) {
    case Op::Permute: {
      Idx r;
      for (int64_t axis : op.attrs.axes) r.push_back(x.at(static_cast<size_t>(axis)));
      return r;
    }
    case Op::Reshape: {
      // view_index with the two shapes swapped: the same elements in C order either way.
      const auto& in = type(op.operands[0]).shape;
      const auto& out = type(op.results[0]).shape;
      Idx r;
      if (!reshape_by_groups(out, in, x, r, code, ind)) r = unravel(ravel(in, x), out, code, ind);
      return r;
    }
    case Op::Slice: {
      const auto& xs = type(op.operands[0]).shape;
      Idx r;
      for (size_t d = 0; d < xs.size(); ++d) {
        const ir::SliceAxis& s = op.attrs.slices[d];
        if (s.dynamic >= 0) throw std::logic_error("view_result_index: a slice with a runtime start");
        const std::string start = dim(s.start);
        if (s.squeeze) {
          inside.push_back(x[d] + " == " + start);
          continue;
        }
        if (s.step == 1 && s.start.is_const(0) && s.size == xs[d]) {  // the whole axis
          r.push_back(x[d]);
          continue;
        }
        const std::string rel = "(" + x[d] + " - " + start + ")";
        if (s.step == 1) {
          inside.push_back(rel + " >= 0 && " + rel + " < " + dim(s.size));
          r.push_back(rel);
        } else {
          const std::string q = "(" + rel + " / " + std::to_string(s.step) + "LL)";
          inside.push_back(rel + " % " + std::to_string(s.step) + "LL == 0 && " + q + " >= 0 && " + q +
                           " < " + dim(s.size));
          r.push_back(q);
        }
      }
      return r;
    }
    default:
      throw std::logic_error(std::string("view_result_index: not an invertible view: ") + ir::op_name(op.op));
  }
}

std::string Ctx::folded_update_stores(ValueId stored, const Idx& at, const std::string& val,
                                      const std::string& ind) {
  std::string code, v;
  for (const scheduler::FusionGroup::FoldedUpdate& fu : g.folded_updates) {
    if (fu.source != stored) continue;
    if (v.empty()) {  // the value once, whatever expression it is, for every store
      v = fresh("fu");
      code += ind + "const " + reg_type(type(stored).dtype) + " " + v + " = " + val + ";\n";
    }
    std::vector<std::string> inside;
    Idx idx = at;
    for (const ir::Operation* view : fu.views) idx = view_result_index(*view, idx, inside, code, ind);
    // The region's element at the value's index, as slice_update_ops writes it in place.
    const ir::Operation& u = *fu.update;
    const auto& xs = type(u.operands[0]).shape;
    Idx dest;
    size_t j = 0;
    for (size_t d = 0; d < xs.size(); ++d) {
      const ir::SliceAxis& sa = u.attrs.slices[d];
      const std::string start = sa.dynamic >= 0 ? dynamic_start(u.operands[static_cast<size_t>(sa.dynamic)],
                                                                xs[d], sa.size, code, ind)
                                                : dim(sa.start);
      const std::string r = sa.squeeze ? "0LL" : idx.at(j++);
      const std::string xi = "(" + start + " + " + std::to_string(sa.step) + "LL * " + r + ")";
      if (!slice_axis_fits(sa, xs[d])) inside.push_back(xi + " < " + dim(xs[d]));
      dest.push_back(xi);
    }
    std::string cond;
    for (const std::string& c : inside) cond += (cond.empty() ? "" : " && ") + c;
    code += ind + (cond.empty() ? "" : "if (" + cond + ") ") + store(u.results[0], dest, v) + "\n";
  }
  return code;
}

bool Ctx::axis_contiguous(ValueId v, size_t axis, int64_t chunk) const {
  for (;;) {
    auto it = prod.find(v);
    if (it == prod.end()) return buf.count(v) && v != leaf && axis + 1 == type(v).rank();
    const ir::Operation& op = *it->second;
    const ValueId x = op.operands[0];
    const auto& xs = type(x).shape;
    switch (op.op) {
      case Op::Permute: axis = static_cast<size_t>(op.attrs.axes.at(axis)); break;
      case Op::Expand: {
        const size_t lead = type(v).rank() - xs.size();
        if (axis < lead || xs[axis - lead].is_const(1)) return false;  // a broadcast axis: stride 0
        axis -= lead;
        break;
      }
      case Op::Slice: {
        size_t j = 0, d = 0;
        for (; d < xs.size(); ++d) {
          if (op.attrs.slices[d].squeeze) continue;
          if (j++ == axis) break;
        }
        if (d == xs.size() || op.attrs.slices[d].step != 1) return false;
        axis = d;
        break;
      }
      case Op::Reshape: {
        std::vector<ReshapeGroup> groups;
        if (!reshape_groups(xs, type(v).shape, groups)) return false;
        bool found = false;
        for (const ReshapeGroup& g : groups) {
          if (axis < g.o0 || axis >= g.o1) continue;
          found = true;
          if (g.i1 - g.i0 == 1) {
            // A split (or 1:1): the input index is a ravel of the group's output indices, in which
            // only the innermost output axis has a unit coefficient.
            if (axis + 1 != g.o1) return false;
            axis = g.i0;
          } else {
            // A merge: the innermost input axis is the output index modulo its extent; a chunk
            // starting at a multiple of `chunk` stays within one run when the extent is a multiple.
            const ir::Dim& e = xs[g.i1 - 1];
            if (!e.is_const() || e.const_value() % chunk != 0) return false;
            axis = g.i1 - 1;
          }
          break;
        }
        if (!found) return false;
        break;
      }
      case Op::Take: {
        // The index operand's axes gather (not contiguous); the axes after them are x's own.
        const size_t ax = static_cast<size_t>(op.attrs.axis), ri = type(op.operands[1]).rank();
        if (axis >= ax && axis < ax + ri) return false;
        if (axis >= ax + ri) axis = axis - ri + 1;
        break;
      }
      default: return false;
    }
    v = x;
  }
}

bool Ctx::axis_separable(ValueId v, size_t axis) const {
  // Per axis of the value reached so far: what its index depends on.
  enum Dep : char { kRow, kAxis, kBoth };  // kBoth: a sum of a row part and an axis part
  std::vector<Dep> dep(type(v).rank(), kRow);
  if (axis >= dep.size()) return false;
  dep[axis] = kAxis;
  for (;;) {
    auto it = prod.find(v);
    if (it == prod.end()) return buf.count(v) && v != leaf;  // buffer_offset is linear in every index
    const ir::Operation& op = *it->second;
    const ValueId x = op.operands[0];
    const auto& xs = type(x).shape;
    std::vector<Dep> in(xs.size(), kRow);
    switch (op.op) {
      case Op::Permute:
        for (size_t i = 0; i < op.attrs.axes.size(); ++i) in[static_cast<size_t>(op.attrs.axes[i])] = dep[i];
        break;
      case Op::Expand: {
        const size_t lead = dep.size() - xs.size();
        for (size_t d = 0; d < xs.size(); ++d) in[d] = xs[d].is_const(1) ? kRow : dep[lead + d];
        break;
      }
      case Op::Slice: {  // start + step * index: linear; a squeezed axis reads its start
        size_t j = 0;
        for (size_t d = 0; d < xs.size(); ++d)
          if (!op.attrs.slices[d].squeeze) in[d] = dep[j++];
        break;
      }
      case Op::Reshape: {
        std::vector<ReshapeGroup> groups;
        if (!reshape_groups(xs, type(v).shape, groups)) return false;
        for (const ReshapeGroup& g : groups) {
          bool row = false, ax = false, both = false;
          for (size_t o = g.o0; o < g.o1; ++o) {
            row = row || dep[o] == kRow;
            ax = ax || dep[o] == kAxis;
            both = both || dep[o] == kBoth;
          }
          const Dep d = both || (row && ax) ? kBoth : ax ? kAxis : kRow;
          // A split is a ravel of its output indices (linear); a merge divides one of them.
          if (g.i1 - g.i0 > 1 && d == kBoth) return false;
          for (size_t i = g.i0; i < g.i1; ++i) in[i] = g.o0 == g.o1 ? kRow : d;
        }
        break;
      }
      case Op::Take: {
        // The gathered axis is a value read at the index operand's axes: a function of them only.
        const size_t ax = static_cast<size_t>(op.attrs.axis), ri = type(op.operands[1]).rank();
        bool row = false, k = false;
        for (size_t i = ax; i < ax + ri; ++i) {
          row = row || dep[i] == kRow;
          k = k || dep[i] == kAxis;
          if (dep[i] == kBoth) return false;
        }
        if (row && k) return false;
        for (size_t i = 0; i < ax; ++i) in[i] = dep[i];
        in[ax] = k ? kAxis : kRow;
        for (size_t i = ax + ri; i < dep.size(); ++i) in[i - ri + 1] = dep[i];
        break;
      }
      default: return false;
    }
    dep = std::move(in);
    v = x;
  }
}

// The address of value v's element at idx when v is a buffer seen through views only (no
// arithmetic, no cast): "" otherwise.
std::string Ctx::address(ValueId v, const Idx& idx, std::string& code, const std::string& ind) {
  auto it = prod.find(v);
  if (it == prod.end()) {
    auto b = buf.find(v);
    if (b == buf.end() || v == leaf) return "";
    const std::string T = storage_type(type(v).dtype), r = fresh("a");
    code += ind + "const " + T + "* " + r + " = (const " + T + "*)p->buf[" + std::to_string(b->second) +
            "] + " + buffer_offset(type(v).shape, idx) + ";\n";
    return r;
  }
  const ir::Operation& op = *it->second;
  switch (op.op) {
    case Op::Expand:
    case Op::Permute:
    case Op::Reshape:
    case Op::Slice: return address(op.operands[0], view_index(op, idx, code, ind), code, ind);
    case Op::Take: return address(op.operands[0], take_index(op, idx, code, ind), code, ind);
    default: return "";
  }
}

std::string Ctx::value(ValueId v, const Idx& idx, std::string& code, const std::string& ind) {
  if (v == leaf) return leaf_expr;
  auto it = prod.find(v);
  if (it == prod.end()) {
    std::string r = fresh("v");
    code += ind + "const " + reg_type(type(v).dtype) + " " + r + " = " + load(v, idx) + ";\n";
    return r;
  }
  return compute(*it->second, idx, code, ind);
}

std::string Ctx::compute(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind) {
  ValueId res = op.results.at(0);
  DType rt = type(res).dtype;
  const ir::Attrs& a = op.attrs;
  std::string r = fresh("v");
  auto def = [&](const std::string& e) {
    code += ind + "const " + reg_type(rt) + " " + r + " = " + e + ";\n";
    return r;
  };
  auto operand = [&](size_t i, const Idx& ix) { return value(op.operands[i], ix, code, ind); };
  if (ir::is_elementwise(op.op) && op.op != Op::Where && op.op != Op::Cast && op.operands.size() == 1) {
    ValueId x = op.operands[0];
    DType xt = type(x).dtype;
    std::string xv = operand(0, broadcast_index(x, idx));
    if (op.op == Op::IsNan) return def(is_float(xt) ? "isnan(" + xv + ")" : "false");
    if (op.op == Op::Not) return def("!" + xv);
    if (is_float(xt)) return def(round_to(rt, unary_float(op.op, xv, a.approx_tanh)));
    std::string xl = "(long long)" + xv;
    switch (op.op) {
      case Op::Neg: return def(wrap_int(rt, "grape_sub_ll(0LL, " + xl + ")"));
      case Op::Abs: return def(wrap_int(rt, "(" + xl + " < 0 ? grape_sub_ll(0LL, " + xl + ") : " + xl + ")"));
      case Op::Sign: return def(wrap_int(rt, "(long long)((" + xl + " > 0) - (" + xl + " < 0))"));
      default: throw std::logic_error(std::string("unsupported integer op ") + ir::op_name(op.op));
    }
  }
  switch (op.op) {
    case Op::Cast: {
      ValueId x = op.operands[0];
      return def(cast_expr(type(x).dtype, rt, operand(0, broadcast_index(x, idx))));
    }
    case Op::Where: {
      std::string c = operand(0, broadcast_index(op.operands[0], idx));
      std::string x = operand(1, broadcast_index(op.operands[1], idx));
      std::string y = operand(2, broadcast_index(op.operands[2], idx));
      return def("(" + c + " ? " + x + " : " + y + ")");
    }
    case Op::Select: {
      // Only the chosen operand is read: the other may be the result of an op whose predicate was
      // false, never written (ir/ir.h); reading it anyway was compute-sanitizer initcheck's report
      // on beam_search (issue 11). It also halves the traffic of large merges.
      std::string c = operand(0, {});
      code += ind + reg_type(rt) + " " + r + ";\n" + ind + "if (" + c + ") {\n";
      std::string x = value(op.operands[1], idx, code, ind + "  ");
      code += ind + "  " + r + " = " + x + ";\n" + ind + "} else {\n";
      std::string y = value(op.operands[2], idx, code, ind + "  ");
      code += ind + "  " + r + " = " + y + ";\n" + ind + "}\n";
      return r;
    }
    case Op::Add:
    case Op::Sub:
    case Op::Mul:
    case Op::Div:
    case Op::Mod:
    case Op::Pow:
    case Op::Maximum:
    case Op::Minimum:
    case Op::Eq:
    case Op::Ne:
    case Op::Lt:
    case Op::Le:
    case Op::Gt:
    case Op::Ge:
    case Op::And:
    case Op::Or: {
      DType ot = type(op.operands[0]).dtype;
      std::string x = operand(0, broadcast_index(op.operands[0], idx));
      std::string y = operand(1, broadcast_index(op.operands[1], idx));
      if (const char* c = compare_op(op.op)) {
        if (is_float(ot) || ot == DType::Bool) return def("(" + x + " " + c + " " + y + ")");
        return def("((long long)" + x + " " + c + " (long long)" + y + ")");
      }
      if (is_float(ot)) return def(round_to(rt, binary_float(op.op, x, y)));
      return def(wrap_int(rt, binary_int(op.op, x, y)));
    }
    case Op::Expand:
    case Op::Permute:
    case Op::Reshape:
    case Op::Slice: return value(op.operands[0], view_index(op, idx, code, ind), code, ind);
    case Op::Concat: {
      size_t ax = static_cast<size_t>(a.axis);
      code += ind + reg_type(rt) + " " + r + ";\n";
      std::string off = "0LL";
      for (size_t i = 0; i < op.operands.size(); ++i) {
        ValueId u = op.operands[i];
        std::string end = "(" + off + " + " + dim_of(u, ax) + ")";
        bool last = i + 1 == op.operands.size();
        code += ind + (i ? "} else " : "") + (last ? "{\n" : "if (" + idx[ax] + " < " + end + ") {\n");
        Idx ix = idx;
        ix[ax] = "(" + idx[ax] + " - " + off + ")";
        std::string v = value(u, ix, code, ind + "  ");
        code += ind + "  " + r + " = " + v + ";\n";
        off = end;
      }
      code += ind + "}\n";
      return r;
    }
    case Op::Take: return value(op.operands[0], take_index(op, idx, code, ind), code, ind);
    case Op::TakeAlongAxis: {
      ValueId x = op.operands[0], iv = op.operands[1];
      size_t ax = static_cast<size_t>(a.axis);
      std::string raw = operand(1, broadcast_index(iv, idx));
      Idx ix = broadcast_index(x, idx);
      ix[ax] = "grape_clamp_index((long long)" + raw + ", " + dim_of(x, ax) + ")";
      return value(x, ix, code, ind);
    }
    case Op::OneHot: {
      // runtime/cpu/gather.cpp one_hot(): out-of-range indices give a zero row.
      Idx ii(idx.begin(), idx.end() - 1);
      std::string raw = operand(0, ii);
      std::string hit = "((long long)" + raw + " == " + idx.back() + ")";
      if (is_float(rt)) return def("(" + hit + " ? 1.0f : 0.0f)");
      if (rt == DType::Bool) return def(hit);
      return def("(" + std::string(reg_type(rt)) + ")(" + hit + " ? 1 : 0)");
    }
    case Op::Arange:
      if (is_float(rt)) return def(round_to(rt, "__ll2float_rn(" + idx[0] + ")"));
      return def("(" + std::string(reg_type(rt)) + ")" + idx[0]);
    case Op::Full:
    case Op::Constant: return literal(rt, a.fvalue, a.ivalue);
    case Op::CausalMask: {
      std::string off = operand(0, {});
      return def("(" + idx[1] + " - " + idx[0] + " <= (long long)" + off + ")");  // j <= i + offset
    }
    default: throw std::logic_error(std::string("op ") + ir::op_name(op.op) + " is not pointwise");
  }
}

std::string Ctx::emit_output(const Idx& idx, const std::string& core_val, const std::string& ind,
                             const scheduler::FusionGroup* part) {
  const scheduler::FusionGroup& pg = part ? *part : g;
  std::string code;
  if (pg.core && pg.root != pg.core) {
    leaf = pg.core->results[0];
    leaf_expr = core_val;
    // A store through a permute (scheduler/fusion.h): the value at the core's index, stored where
    // the permute puts it (result axis i is operand axis axes[i]).
    const bool permuted = pg.root->op == ir::Op::Permute;
    std::string v =
        permuted ? value(pg.root->operands[0], idx, code, ind) : compute(*pg.root, idx, code, ind);
    Idx at = idx;
    if (permuted) {
      at.clear();
      for (int64_t axis : pg.root->attrs.axes) at.push_back(idx.at(static_cast<size_t>(axis)));
    }
    code += ind + store(pg.root->results[0], at, v) + "\n";
    code += folded_update_stores(pg.root->results[0], at, v, ind);
    leaf = ir::kNoValue;
  } else {
    code += ind + store(pg.root->results[0], idx, core_val) + "\n";
    code += folded_update_stores(pg.root->results[0], idx, core_val, ind);
  }
  return code;
}

}  // namespace grape::jit::detail
