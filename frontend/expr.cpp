// Expressions: name resolution, literals, operators with NumPy broadcasting, indexing, weights,
// and inlined calls of user functions. Shapes are inferred symbolically; mismatches name both
// shapes as written.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/globals.h"
#include "frontend/lowerer.h"

namespace grape::frontend {

using ir::kNoValue;
using ir::ValueId;

static ir::Type scalar(DType t) { return ir::Type{t, {}}; }

std::optional<std::vector<ir::Dim>> broadcast_dims(const std::vector<ir::Dim>& a,
                                                   const std::vector<ir::Dim>& b) {
  size_t n = std::max(a.size(), b.size());
  std::vector<ir::Dim> out(n);
  for (size_t i = 0; i < n; ++i) {
    const ir::Dim* da = i < a.size() ? &a[a.size() - 1 - i] : nullptr;
    const ir::Dim* db = i < b.size() ? &b[b.size() - 1 - i] : nullptr;
    ir::Dim r;
    if (!da)
      r = *db;
    else if (!db)
      r = *da;
    else if (*da == *db)
      r = *da;
    else if (da->is_const(1))
      r = *db;
    else if (db->is_const(1))
      r = *da;
    else
      return std::nullopt;
    out[n - 1 - i] = r;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Conversions

std::optional<ValueId> Lowerer::to_tensor(const Val& v, std::optional<DType> like, Span span) {
  switch (v.kind) {
    case Val::Kind::Error: return std::nullopt;
    case Val::Kind::Tensor: return v.v;
    case Val::Kind::Int: {
      DType t = like.value_or(DType::I32);
      if (t == DType::Bool) {
        error(span, "integer literal " + std::to_string(v.i) + " used as a bool; write true or false");
        return std::nullopt;
      }
      if (t == DType::I32 &&
          (v.i < std::numeric_limits<int32_t>::min() || v.i > std::numeric_limits<int32_t>::max())) {
        error(span, "integer " + std::to_string(v.i) + " does not fit in i32");
        return std::nullopt;
      }
      return constant(t, static_cast<double>(v.i), span);
    }
    case Val::Kind::Float: {
      DType t = like.value_or(DType::F32);
      if (!is_float(t)) {
        error(span, "float literal used with a " + std::string(dtype_name(t)) +
                        " value; cast the tensor to a float type first");
        return std::nullopt;
      }
      return constant(t, v.f, span);
    }
    case Val::Kind::Bool: {
      DType t = like.value_or(DType::Bool);
      if (t != DType::Bool) {
        error(span, std::string("boolean literal used with a ") + dtype_name(t) + " value");
        return std::nullopt;
      }
      return constant(DType::Bool, static_cast<double>(v.i), span);
    }
    case Val::Kind::Dim: {
      ir::Attrs a;
      a.shape = {v.dim};
      ValueId d = emit(ir::Op::DimValue, {}, scalar(DType::I32), a, span, false);
      DType t = like.value_or(DType::I32);
      if (t == DType::Bool) {
        error(span, "dimension " + v.dim.str() + " used as a bool");
        return std::nullopt;
      }
      if (t == DType::I32) return d;
      ir::Attrs c;
      c.dtype = t;
      return emit(ir::Op::Cast, {d}, scalar(t), c, span, false);
    }
    case Val::Kind::Tuple: error(span, "expected a tensor, got a tuple"); return std::nullopt;
    case Val::Kind::WeightPath:
      error(span,
            quote_name(v.text) + " names a group of weights, not one weight; index it or select a member");
      return std::nullopt;
    case Val::Kind::DType:
      error(span, std::string("expected a tensor, got the type name ") + dtype_name(v.dtype));
      return std::nullopt;
    case Val::Kind::String: error(span, "expected a tensor, got a string"); return std::nullopt;
  }
  return std::nullopt;
}

std::optional<int64_t> Lowerer::require_int(const Val& v, const std::string& what) {
  if (v.kind == Val::Kind::Int) return v.i;
  if (v.is_error()) return std::nullopt;
  if (v.is_tensor() && v.loop_index >= 0) throw NeedsUnroll{v.loop_index};
  std::string got = v.is_tensor()              ? "a device value of type " + type_str(v.v)
                    : v.kind == Val::Kind::Dim ? "the symbolic dimension " + v.dim.str()
                                               : std::string("a non-integer");
  error(expr_span_, what + " must be a compile-time integer, got " + got);
  return std::nullopt;
}

std::optional<ir::Dim> Lowerer::require_dim(const Val& v, const std::string& what) {
  if (v.kind == Val::Kind::Int) return ir::Dim(v.i);
  if (v.kind == Val::Kind::Dim) return v.dim;
  if (v.is_error()) return std::nullopt;
  if (v.is_tensor() && v.loop_index >= 0) throw NeedsUnroll{v.loop_index};
  error(expr_span_, what + " must be a compile-time integer or a dimension" +
                        (v.is_tensor() ? ", got a device value of type " + type_str(v.v) : std::string()));
  return std::nullopt;
}

std::optional<ir::Dim> Lowerer::resolve_dim_expr(const ast::Expr& e,
                                                 std::map<std::string, ir::Dim>* new_symbols) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::IntLit: return ir::Dim(e.int_value);
    case K::Name: {
      auto c = g_.consts.find(e.text);
      if (c != g_.consts.end()) return ir::Dim(c->second);
      if (g_.poisoned.count(e.text)) {
        poisoned_use();
        return std::nullopt;
      }
      auto& dims = ctx_.back().dims;
      auto d = dims.find(e.text);
      if (d != dims.end()) return d->second;
      // Compile-time int parameters and unrolled indices may appear in shapes too.
      if (auto slot = lookup_slot(e.text)) {
        const Val& v = slots_[*slot].val;
        if (v.kind == Val::Kind::Int) return ir::Dim(v.i);
        if (v.kind == Val::Kind::Dim) return v.dim;
      }
      if (new_symbols) {
        ir::Dim s = ir::Dim::sym(e.text);
        dims[e.text] = s;
        (*new_symbols)[e.text] = s;
        return s;
      }
      std::vector<std::string> names;
      for (const auto& [n, v] : g_.consts) names.push_back(n);
      for (const auto& [n, v] : dims) names.push_back(n);
      std::string msg = "unknown dimension " + quote_name(e.text) +
                        ": it is neither a const nor bound by a parameter's shape";
      std::string best = closest_name(e.text, names);
      if (!best.empty()) msg += " (did you mean " + quote_name(best) + "?)";
      error(e.span, msg);
      return std::nullopt;
    }
    case K::Unary:
      if (e.unary_op == ast::UnaryOp::Neg) {
        auto v = resolve_dim_expr(*e.args[0], new_symbols);
        if (v) return ir::Dim(0) - *v;
        return std::nullopt;
      }
      break;
    case K::Binary: {
      auto a = resolve_dim_expr(*e.args[0], new_symbols);
      auto b = resolve_dim_expr(*e.args[1], new_symbols);
      if (!a || !b) return std::nullopt;
      std::string err;
      auto r = combine_dims(e.binary_op, *a, *b, &err);
      if (r) return r;
      if (!err.empty()) {
        error(e.span, err);
        return std::nullopt;
      }
      break;
    }
    default: break;
  }
  error(e.span, "expected a dimension: an integer, a const, a symbolic name, or + - * / of those");
  return std::nullopt;
}

std::optional<ir::Type> Lowerer::resolve_type(const ast::TypeExpr& t,
                                              std::map<std::string, ir::Dim>* new_symbols) {
  if (t.dtype == "int") {
    error(t.dtype_span, "`int` (a compile-time integer) is only allowed as a function parameter type");
    return std::nullopt;
  }
  auto dt = parse_dtype(t.dtype);
  if (!dt) {
    std::string best = closest_name(t.dtype, {"f32", "f16", "bf16", "i32", "i64", "bool"});
    error(t.dtype_span, "unknown element type " + quote_name(t.dtype) +
                            (best.empty() ? " (expected f32, f16, bf16, i32, i64 or bool)"
                                          : "; did you mean " + quote_name(best) + "?"));
    return std::nullopt;
  }
  ir::Type out{*dt, {}};
  bool ok = true;
  for (const auto& d : t.dims) {
    auto dim = resolve_dim_expr(*d, new_symbols);
    if (!dim) {
      ok = false;
      continue;
    }
    if (dim->is_const() && dim->const_value() < 0) {
      error(d->span, "dimension must not be negative, got " + dim->str());
      ok = false;
    }
    out.shape.push_back(*dim);
  }
  if (!ok) return std::nullopt;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Expressions

Val Lowerer::lower_expr(const ast::Expr& e) {
  Span saved = expr_span_;
  expr_span_ = e.span;
  Val r;
  switch (e.kind) {
    case ast::ExprKind::IntLit: r = Val::integer(e.int_value); break;
    case ast::ExprKind::FloatLit: r = Val::floating(e.float_value); break;
    case ast::ExprKind::BoolLit: r = Val::boolean(e.bool_value); break;
    case ast::ExprKind::StringLit:
      r.kind = Val::Kind::String;
      r.text = e.text;
      break;
    case ast::ExprKind::Name: r = lower_name(e); break;
    case ast::ExprKind::Member: r = lower_member(e); break;
    case ast::ExprKind::Unary: r = lower_unary(e.unary_op, lower_expr(*e.args[0]), e.span); break;
    case ast::ExprKind::Binary: {
      Val a = lower_expr(*e.args[0]);
      Val b = lower_expr(*e.args[1]);
      expr_span_ = e.span;
      r = lower_binary(e.binary_op, a, b, e.span);
      break;
    }
    case ast::ExprKind::Call: r = lower_call(e); break;
    case ast::ExprKind::Index: r = lower_index(e); break;
    case ast::ExprKind::Tuple: {
      std::vector<Val> elems;
      for (const auto& a : e.args) elems.push_back(lower_expr(*a));
      r = Val::tuple(std::move(elems));
      break;
    }
  }
  expr_span_ = saved;
  return r;
}

Val Lowerer::weight_path(const std::string& path, Span span) {
  auto w = g_.weights.find(path);
  if (w != g_.weights.end()) {
    auto cached = weight_values_.find(path);
    if (cached != weight_values_.end()) return Val::tensor(cached->second);
    // Weights are sources: hoisted to the top of the entry so that loops and branches share them.
    ir::Operation o;
    o.op = ir::Op::Weight;
    o.attrs.name = w->second.file_name;
    o.loc = span;
    ValueId v = fn_->new_value(w->second.type, path);
    o.results.push_back(v);
    fn_->body.ops.insert(fn_->body.ops.begin() + static_cast<long>(hoist_pos_++), std::move(o));
    weight_values_[path] = v;
    return Val::tensor(v);
  }
  if (g_.is_weight_prefix(path)) {
    Val r;
    r.kind = Val::Kind::WeightPath;
    r.text = path;
    return r;
  }
  // `h.w` where h is a group: the index is missing.
  for (size_t dot = path.rfind('.'); dot != std::string::npos && dot > 0; dot = path.rfind('.', dot - 1)) {
    std::string prefix = path.substr(0, dot);
    auto g = g_.groups.find(prefix);
    if (g != g_.groups.end()) {
      error(span, quote_name(prefix) + " is a group of " + std::to_string(g->second) +
                      " weights; index it first, e.g. " + prefix + "[0]" + path.substr(dot));
      return Val::error();
    }
    if (dot == 0) break;
  }
  std::string best = closest_name(path, g_.weight_order);
  error(span, "unknown weight " + quote_name(path) +
                  (best.empty() ? "" : "; did you mean " + quote_name(best) + "?"));
  return Val::error();
}

Val Lowerer::lower_name(const ast::Expr& e) {
  const std::string& n = e.text;
  if (auto slot = lookup_slot(n)) return slots_[*slot].val;
  if (g_.states.count(n)) {
    error(e.span, "state " + quote_name(n) + " has shape " + g_.state_info.at(n).type.str() +
                      ", whose symbolic dims are not all bound by the parameters of " +
                      quote_name(ctx_.front().decl->name));
    return Val::error();
  }
  auto c = g_.consts.find(n);
  if (c != g_.consts.end()) return Val::integer(c->second);
  if (g_.poisoned.count(n)) return poisoned_use();
  auto d = ctx_.back().dims.find(n);
  if (d != ctx_.back().dims.end()) return Val::dimension(d->second);
  if (g_.is_weight_prefix(n)) return weight_path(n, e.span);
  if (auto dt = parse_dtype(n)) {
    Val r;
    r.kind = Val::Kind::DType;
    r.dtype = *dt;
    return r;
  }
  if (g_.fns.count(n)) {
    error(e.span, quote_name(n) + " is a function; call it with (...)");
    return Val::error();
  }
  std::vector<std::string> names = g_.all_names();
  for (const auto& scope : ctx_.back().scopes)
    for (const auto& [name, slot] : scope) names.push_back(name);
  for (const auto& [name, dim] : ctx_.back().dims) names.push_back(name);
  std::string best = closest_name(n, names);
  error(e.span,
        "unknown name " + quote_name(n) + (best.empty() ? "" : "; did you mean " + quote_name(best) + "?"));
  return Val::error();
}

Val Lowerer::lower_member(const ast::Expr& e) {
  Val base = lower_expr(*e.args[0]);
  if (base.is_error()) return base;
  if (base.kind != Val::Kind::WeightPath) {
    error(e.span, quote_name("." + e.text) + " can only select a member of a weight name");
    return Val::error();
  }
  return weight_path(base.text + "." + e.text, e.span);
}

Val Lowerer::lower_unary(ast::UnaryOp op, const Val& a, Span span) {
  if (a.is_error()) return a;
  if (op == ast::UnaryOp::Neg) {
    if (a.kind == Val::Kind::Int) return Val::integer(-a.i);
    if (a.kind == Val::Kind::Float) return Val::floating(-a.f);
    if (a.kind == Val::Kind::Dim) return Val::dimension(ir::Dim(0) - a.dim);
    auto t = to_tensor(a, std::nullopt, span);
    if (!t) return Val::error();
    if (type_of(*t).dtype == DType::Bool) {
      error(span, "cannot negate a bool tensor; use `not`");
      return Val::error();
    }
    return Val::tensor(emit(ir::Op::Neg, {*t}, type_of(*t), {}, span), a.loop_index);
  }
  if (a.kind == Val::Kind::Bool) return Val::boolean(!a.i);
  auto t = a.is_tensor() ? std::optional<ValueId>(a.v) : std::nullopt;
  if (!t || type_of(*t).dtype != DType::Bool) {
    error(span, "`not` needs a bool operand" + (t ? ", got " + type_str(*t) : std::string()));
    return Val::error();
  }
  return Val::tensor(emit(ir::Op::Not, {*t}, type_of(*t), {}, span));
}

static ir::Op binary_opcode(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add: return ir::Op::Add;
    case ast::BinaryOp::Sub: return ir::Op::Sub;
    case ast::BinaryOp::Mul: return ir::Op::Mul;
    case ast::BinaryOp::Div: return ir::Op::Div;
    case ast::BinaryOp::Mod: return ir::Op::Mod;
    case ast::BinaryOp::MatMul: return ir::Op::MatMul;
    case ast::BinaryOp::Eq: return ir::Op::Eq;
    case ast::BinaryOp::Ne: return ir::Op::Ne;
    case ast::BinaryOp::Lt: return ir::Op::Lt;
    case ast::BinaryOp::Le: return ir::Op::Le;
    case ast::BinaryOp::Gt: return ir::Op::Gt;
    case ast::BinaryOp::Ge: return ir::Op::Ge;
    case ast::BinaryOp::And: return ir::Op::And;
    case ast::BinaryOp::Or: return ir::Op::Or;
  }
  return ir::Op::Add;
}

static bool is_comparison(ast::BinaryOp op) {
  return op == ast::BinaryOp::Eq || op == ast::BinaryOp::Ne || op == ast::BinaryOp::Lt ||
         op == ast::BinaryOp::Le || op == ast::BinaryOp::Gt || op == ast::BinaryOp::Ge;
}
static bool is_logical(ast::BinaryOp op) { return op == ast::BinaryOp::And || op == ast::BinaryOp::Or; }

// Folds an operator over two compile-time numbers; nullopt if it cannot be folded statically.
static std::optional<Val> fold_static(ast::BinaryOp op, const Val& a, const Val& b, std::string& err) {
  using B = ast::BinaryOp;
  if (is_logical(op)) {
    if (a.kind != Val::Kind::Bool || b.kind != Val::Kind::Bool) {
      err = std::string("`") + ast::to_string(op) + "` needs bool operands";
      return Val::error();
    }
    return Val::boolean(op == B::And ? (a.i && b.i) : (a.i || b.i));
  }
  if (a.kind == Val::Kind::Bool || b.kind == Val::Kind::Bool) {
    if (op == B::Eq || op == B::Ne) {
      if (a.kind != b.kind) {
        err = "cannot compare a bool with a number";
        return Val::error();
      }
      return Val::boolean((a.i == b.i) == (op == B::Eq));
    }
    err = std::string("operator `") + ast::to_string(op) + "` is not defined on bool values";
    return Val::error();
  }
  if (op == B::MatMul) {
    err = "`@` needs tensor operands";
    return Val::error();
  }
  if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int) {
    int64_t x = a.i, y = b.i, r = 0;
    switch (op) {
      case B::Add:
        if (__builtin_add_overflow(x, y, &r)) break;
        return Val::integer(r);
      case B::Sub:
        if (__builtin_sub_overflow(x, y, &r)) break;
        return Val::integer(r);
      case B::Mul:
        if (__builtin_mul_overflow(x, y, &r)) break;
        return Val::integer(r);
      case B::Div:
      case B::Mod: {
        if (y == 0) {
          err = "division by zero in a compile-time expression";
          return Val::error();
        }
        if (x == std::numeric_limits<int64_t>::min() && y == -1) break;
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
          q -= 1;
          m += y;
        }
        return Val::integer(op == B::Div ? q : m);
      }
      case B::Eq: return Val::boolean(x == y);
      case B::Ne: return Val::boolean(x != y);
      case B::Lt: return Val::boolean(x < y);
      case B::Le: return Val::boolean(x <= y);
      case B::Gt: return Val::boolean(x > y);
      case B::Ge: return Val::boolean(x >= y);
      default: break;
    }
    err = "integer overflow in a compile-time expression";
    return Val::error();
  }
  double x = a.kind == Val::Kind::Int ? static_cast<double>(a.i) : a.f;
  double y = b.kind == Val::Kind::Int ? static_cast<double>(b.i) : b.f;
  // Float literals are f32 values: fold in float so that the result equals the device's.
  float fx = static_cast<float>(x), fy = static_cast<float>(y);
  switch (op) {
    case B::Add: return Val::floating(fx + fy);
    case B::Sub: return Val::floating(fx - fy);
    case B::Mul: return Val::floating(fx * fy);
    case B::Div: return Val::floating(fx / fy);
    case B::Mod: return Val::floating(fx - std::floor(fx / fy) * fy);
    case B::Eq: return Val::boolean(fx == fy);
    case B::Ne: return Val::boolean(fx != fy);
    case B::Lt: return Val::boolean(fx < fy);
    case B::Le: return Val::boolean(fx <= fy);
    case B::Gt: return Val::boolean(fx > fy);
    case B::Ge: return Val::boolean(fx >= fy);
    default: break;
  }
  return std::nullopt;
}

Val Lowerer::lower_binary(ast::BinaryOp op, const Val& a, const Val& b, Span span) {
  if (a.is_error() || b.is_error()) return Val::error();
  if (a.is_static_number() && b.is_static_number()) {
    std::string err;
    auto r = fold_static(op, a, b, err);
    if (!err.empty()) error(span, err);
    if (r) return *r;
  }
  // Dimension arithmetic stays symbolic so that it can be used in shapes.
  bool dim_like_a = a.kind == Val::Kind::Dim || a.kind == Val::Kind::Int;
  bool dim_like_b = b.kind == Val::Kind::Dim || b.kind == Val::Kind::Int;
  if (dim_like_a && dim_like_b && (a.kind == Val::Kind::Dim || b.kind == Val::Kind::Dim)) {
    ir::Dim x = a.kind == Val::Kind::Dim ? a.dim : ir::Dim(a.i),
            y = b.kind == Val::Kind::Dim ? b.dim : ir::Dim(b.i);
    switch (op) {
      case ast::BinaryOp::Add: return Val::dimension(x + y);
      case ast::BinaryOp::Sub: return Val::dimension(x - y);
      case ast::BinaryOp::Mul: return Val::dimension(x * y);
      case ast::BinaryOp::Div: {
        auto q = ir::Dim::div(x, y);
        if (q) return Val::dimension(*q);
        break;
      }
      default: break;
    }
  }
  if (a.kind == Val::Kind::Tuple || b.kind == Val::Kind::Tuple) {
    error(span, std::string("operator `") + ast::to_string(op) +
                    "` got a tuple; take it apart first with `let a, b = ...` or index it with t[0]");
    return Val::error();
  }
  if (a.kind == Val::Kind::String || b.kind == Val::Kind::String || a.kind == Val::Kind::DType ||
      b.kind == Val::Kind::DType || a.kind == Val::Kind::WeightPath || b.kind == Val::Kind::WeightPath) {
    error(span, std::string("operator `") + ast::to_string(op) + "` needs tensor or number operands");
    return Val::error();
  }
  // A literal takes the dtype of the tensor next to it.
  std::optional<DType> like;
  if (a.is_tensor())
    like = type_of(a.v).dtype;
  else if (b.is_tensor())
    like = type_of(b.v).dtype;
  auto ta = to_tensor(a, like, span);
  auto tb = to_tensor(b, like, span);
  if (!ta || !tb) return Val::error();
  const ir::Type& xa = type_of(*ta);
  const ir::Type& xb = type_of(*tb);
  int loop_index = std::max(a.loop_index, b.loop_index);
  std::string opname = std::string("`") + ast::to_string(op) + "`";
  if (xa.dtype != xb.dtype) {
    error(span, "dtype mismatch in " + opname + ": " + xa.str() + " and " + xb.str() +
                    "; convert one with cast(x, " + dtype_name(xa.dtype) + ")");
    return Val::error();
  }
  DType dt = xa.dtype;
  if (is_logical(op) && dt != DType::Bool) {
    error(span, opname + " needs bool operands, got " + xa.str() + " and " + xb.str());
    return Val::error();
  }
  if (!is_logical(op) && !is_comparison(op) && dt == DType::Bool) {
    error(span, "arithmetic " + opname + " on bool tensors; convert with cast(x, i32) or use and/or");
    return Val::error();
  }
  if (is_comparison(op) && dt == DType::Bool && op != ast::BinaryOp::Eq && op != ast::BinaryOp::Ne) {
    error(span, "ordering comparison " + opname + " on bool tensors");
    return Val::error();
  }
  if (op == ast::BinaryOp::MatMul) {
    auto shape = matmul_shape(xa, xb, span);
    if (!shape) return Val::error();
    return Val::tensor(emit(ir::Op::MatMul, {*ta, *tb}, ir::Type{dt, *shape}, {}, span), loop_index);
  }
  auto shape = broadcast_dims(xa.shape, xb.shape);
  if (!shape) {
    error(span, "shapes " + xa.str() + " and " + xb.str() + " cannot be broadcast together in " + opname);
    return Val::error();
  }
  DType out = is_comparison(op) ? DType::Bool : dt;
  return Val::tensor(emit(binary_opcode(op), {*ta, *tb}, ir::Type{out, *shape}, {}, span), loop_index);
}

std::optional<std::vector<ir::Dim>> Lowerer::matmul_shape(const ir::Type& a, const ir::Type& b, Span span) {
  if (a.rank() == 0 || b.rank() == 0) {
    error(span, "`@` needs operands of rank >= 1, got " + a.str() + " and " + b.str());
    return std::nullopt;
  }
  std::vector<ir::Dim> sa = a.shape, sb = b.shape;
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), ir::Dim(1));
  if (b_vec) sb.push_back(ir::Dim(1));
  const ir::Dim& k1 = sa.back();
  const ir::Dim& k2 = sb[sb.size() - 2];
  if (k1 != k2) {
    error(span, "`@` inner dimensions differ: " + a.str() + " @ " + b.str() + " (" + k1.str() + " vs " +
                    k2.str() + ")");
    return std::nullopt;
  }
  std::vector<ir::Dim> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  auto batch = broadcast_dims(ba, bb);
  if (!batch) {
    error(span, "`@` batch dimensions of " + a.str() + " and " + b.str() + " cannot be broadcast together");
    return std::nullopt;
  }
  std::vector<ir::Dim> out = *batch;
  if (!a_vec) out.push_back(sa[sa.size() - 2]);
  if (!b_vec) out.push_back(sb.back());
  return out;
}

// ---------------------------------------------------------------------------------------------
// Indexing

// Structural equality of two expressions as written (for the `x[a : a + k]` pattern).
static bool same_expr(const ast::Expr& a, const ast::Expr& b) {
  if (a.kind != b.kind || a.text != b.text || a.int_value != b.int_value || a.float_value != b.float_value ||
      a.bool_value != b.bool_value || a.args.size() != b.args.size() || !a.kwargs.empty() ||
      !b.kwargs.empty() || a.items.size() != b.items.size())
    return false;
  if (a.kind == ast::ExprKind::Unary && a.unary_op != b.unary_op) return false;
  if (a.kind == ast::ExprKind::Binary && a.binary_op != b.binary_op) return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!same_expr(*a.args[i], *b.args[i])) return false;
  for (size_t i = 0; i < a.items.size(); ++i) {
    const auto &x = a.items[i], &y = b.items[i];
    if (x.kind != y.kind || x.kind != ast::IndexItem::Kind::Index || !same_expr(*x.index, *y.index))
      return false;
  }
  return true;
}

Lowerer::SliceSpec Lowerer::resolve_slice(const ir::Type& t, const std::vector<ast::IndexItem>& items,
                                          Span span) {
  SliceSpec spec;
  size_t rank = t.rank();
  size_t real = 0, ellipses = 0;
  for (const auto& it : items) (it.kind == ast::IndexItem::Kind::Ellipsis ? ellipses : real)++;
  if (ellipses > 1 || real > rank) {
    error(span, ellipses > 1 ? "an index may contain at most one `...`"
                             : "too many indices for " + t.str() + " (rank " + std::to_string(rank) +
                                   "): " + std::to_string(real) + " given");
    spec.ok = false;
    return spec;
  }
  std::vector<const ast::IndexItem*> per_axis;
  for (const auto& it : items) {
    if (it.kind == ast::IndexItem::Kind::Ellipsis) {
      for (size_t k = 0; k < rank - real; ++k) per_axis.push_back(nullptr);
    } else {
      per_axis.push_back(&it);
    }
  }
  while (per_axis.size() < rank) per_axis.push_back(nullptr);

  auto static_pos = [&](const Val& v, const ir::Dim& dim, Span s, bool is_index) -> std::optional<ir::Dim> {
    if (v.kind == Val::Kind::Int) {
      int64_t k = v.i;
      if (dim.is_const()) {
        int64_t n = dim.const_value();
        if (is_index && (k < -n || k >= n)) {
          error(s, "index " + std::to_string(k) + " is out of range for a dimension of size " +
                       std::to_string(n));
          return std::nullopt;
        }
        if (!is_index)
          k = std::clamp<int64_t>(k < 0 ? k + n : k, 0, n);
        else if (k < 0)
          k += n;
        return ir::Dim(k);
      }
      return k < 0 ? dim + ir::Dim(k) : ir::Dim(k);
    }
    if (v.kind == Val::Kind::Dim) return v.dim;
    // A static loop index used as a slice bound: the loop must be unrolled.
    if (!is_index && v.is_tensor() && v.loop_index >= 0) throw NeedsUnroll{v.loop_index};
    return std::nullopt;
  };

  for (size_t axis = 0; axis < rank; ++axis) {
    const ir::Dim& dim = t.shape[axis];
    const ast::IndexItem* it = per_axis[axis];
    ir::SliceAxis ax;
    if (!it) {
      ax.start = ir::Dim(0);
      ax.size = dim;
      spec.result_shape.push_back(dim);
      spec.axes.push_back(ax);
      continue;
    }
    if (it->kind == ast::IndexItem::Kind::Index) {
      Val v = lower_expr(*it->index);
      ax.size = ir::Dim(1);
      ax.squeeze = true;
      if (v.is_error()) {
        spec.ok = false;
      } else if (v.is_tensor()) {
        const ir::Type& vt = type_of(v.v);
        if (vt.rank() != 0 || !is_int(vt.dtype)) {
          error(it->span, "an index must be an integer scalar, got " + vt.str() +
                              (vt.rank() ? "; use take(x, idx, axis=...) to gather" : ""));
          spec.ok = false;
        } else {
          ax.dynamic = static_cast<int>(spec.dynamic.size());
          spec.dynamic.push_back(v.v);
        }
      } else if (auto p = static_pos(v, dim, it->span, true)) {
        ax.start = *p;
      } else {
        if (v.kind != Val::Kind::Int) error(it->span, "an index must be an integer");
        spec.ok = false;
      }
      spec.axes.push_back(ax);
      continue;
    }
    // start:stop:step
    int64_t step = 1;
    if (it->step) {
      Val sv = lower_expr(*it->step);
      if (sv.kind != Val::Kind::Int || sv.i <= 0) {
        if (!sv.is_error()) error(it->step->span, "a slice step must be a positive compile-time integer");
        spec.ok = false;
        continue;
      }
      step = sv.i;
    }
    // x[a : a + k] with a device scalar a: a dynamic slice of the static size k.
    if (it->start && it->stop) {
      Val sv = lower_expr(*it->start);
      const ast::Expr& stop_e = *it->stop;
      if (sv.is_tensor() && stop_e.kind == ast::ExprKind::Binary && stop_e.binary_op == ast::BinaryOp::Add) {
        const ast::Expr* k_expr = same_expr(*stop_e.args[0], *it->start)   ? stop_e.args[1].get()
                                  : same_expr(*stop_e.args[1], *it->start) ? stop_e.args[0].get()
                                                                           : nullptr;
        const ir::Type& st = type_of(sv.v);
        if (k_expr && st.rank() == 0 && is_int(st.dtype)) {
          Val kv = lower_expr(*k_expr);
          if (kv.kind != Val::Kind::Int || kv.i < 0 || (dim.is_const() && kv.i > dim.const_value())) {
            if (!kv.is_error())
              error(k_expr->span,
                    "the size of a dynamic slice x[a:a+k] must be a compile-time integer between 0 and "
                    "the dimension (" +
                        dim.str() + ")");
            spec.ok = false;
            continue;
          }
          ax.dynamic = static_cast<int>(spec.dynamic.size());
          spec.dynamic.push_back(sv.v);
          ax.size = ir::Dim((kv.i + step - 1) / step);
          ax.step = step;
          spec.axes.push_back(ax);
          spec.result_shape.push_back(ax.size);
          continue;
        }
      }
    }
    ir::Dim start(0), stop = dim;
    for (auto [part, out] : {std::pair{it->start.get(), &start}, std::pair{it->stop.get(), &stop}}) {
      if (!part) continue;
      Val v = lower_expr(*part);
      if (v.is_error()) {
        spec.ok = false;
        continue;
      }
      auto p = static_pos(v, dim, part->span, false);
      if (!p) {
        error(part->span,
              "slice bounds must be compile-time integers or dimensions; for a dynamic position use an "
              "integer index x[i]");
        spec.ok = false;
        continue;
      }
      *out = *p;
    }
    ir::Dim size = stop - start;
    if (size.is_const() && size.const_value() < 0) size = ir::Dim(0);
    if (step != 1) {
      // ceil(size / step): exact for constants; symbolic sizes become a division checked at run time.
      if (size.is_const()) {
        size = ir::Dim((size.const_value() + step - 1) / step);
      } else {
        auto q = ir::Dim::div(size + ir::Dim(step - 1), ir::Dim(step));
        if (!q) {
          error(it->span, "cannot compute the length of this strided slice");
          spec.ok = false;
          continue;
        }
        size = *q;
      }
    }
    ax.start = start;
    ax.size = size;
    ax.step = step;
    spec.axes.push_back(ax);
    spec.result_shape.push_back(size);
  }
  return spec;
}

Val Lowerer::lower_index(const ast::Expr& e) {
  Val base = lower_expr(*e.args[0]);
  if (base.is_error()) return base;
  if (base.kind == Val::Kind::WeightPath || base.kind == Val::Kind::Tuple) {
    if (e.items.size() != 1 || e.items[0].kind != ast::IndexItem::Kind::Index) {
      error(e.span, base.kind == Val::Kind::Tuple ? "a tuple takes one integer index"
                                                  : "a weight group takes one integer index");
      return Val::error();
    }
    expr_span_ = e.items[0].span;
    auto k = require_int(lower_expr(*e.items[0].index),
                         base.kind == Val::Kind::Tuple ? "a tuple index" : "a weight group index");
    if (!k) return Val::error();
    if (base.kind == Val::Kind::Tuple) {
      int64_t n = static_cast<int64_t>(base.elems.size());
      int64_t i = *k < 0 ? *k + n : *k;
      if (i < 0 || i >= n) {
        error(e.items[0].span,
              "tuple index " + std::to_string(*k) + " is out of range for a tuple of " + std::to_string(n));
        return Val::error();
      }
      return base.elems[static_cast<size_t>(i)];
    }
    auto g = g_.groups.find(base.text);
    if (g != g_.groups.end() && (*k < 0 || *k >= g->second)) {
      error(e.items[0].span, "weight group " + quote_name(base.text) + " has " + std::to_string(g->second) +
                                 " entries (valid indices 0.." + std::to_string(g->second - 1) + "); index " +
                                 std::to_string(*k) + " is out of range");
      return Val::error();
    }
    return weight_path(base.text + "." + std::to_string(*k), e.span);
  }
  if (!base.is_tensor()) {
    error(e.args[0]->span, "only tensors, tuples and weight groups can be indexed");
    return Val::error();
  }
  const ir::Type t = type_of(base.v);
  SliceSpec spec = resolve_slice(t, e.items, e.span);
  if (!spec.ok) return Val::error();
  ir::Attrs a;
  a.slices = spec.axes;
  for (auto& ax : a.slices)
    if (ax.dynamic >= 0) ax.dynamic += 1;
  std::vector<ValueId> operands{base.v};
  operands.insert(operands.end(), spec.dynamic.begin(), spec.dynamic.end());
  return Val::tensor(emit(ir::Op::Slice, operands, ir::Type{t.dtype, spec.result_shape}, a, e.span));
}

// ---------------------------------------------------------------------------------------------
// Calls

// A dimension expression as written in the source (`E/NH`, `3*E`).
static std::string dim_text(const ast::Expr& e) {
  switch (e.kind) {
    case ast::ExprKind::IntLit: return std::to_string(e.int_value);
    case ast::ExprKind::Name: return e.text;
    case ast::ExprKind::Unary: return "-" + dim_text(*e.args[0]);
    case ast::ExprKind::Binary: {
      auto side = [](const ast::Expr& x) {
        return x.kind == ast::ExprKind::Binary ? "(" + dim_text(x) + ")" : dim_text(x);
      };
      return side(*e.args[0]) + ast::to_string(e.binary_op) + side(*e.args[1]);
    }
    default: return "?";
  }
}

std::string type_text(const ast::TypeExpr& t) {
  std::string s = t.dtype + "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? ", " : "") + dim_text(*t.dims[i]);
  return s + "]";
}

Val Lowerer::lower_call(const ast::Expr& e) {
  auto f = g_.fns.find(e.text);
  if (f != g_.fns.end()) {
    if (!e.kwargs.empty()) {
      error(e.kwargs[0].name_span, quote_name(e.text) + " is a user function and takes no keyword arguments");
      return Val::error();
    }
    std::vector<Val> args;
    for (const auto& a : e.args) args.push_back(lower_expr(*a));
    return call_function(*f->second, e, std::move(args));
  }
  if (auto r = lower_builtin(e.text, e)) return *r;
  std::vector<std::string> names = builtin_names();
  for (const auto& [n, fn] : g_.fns) names.push_back(n);
  std::string best = closest_name(e.text, names);
  error(e.callee_span, "unknown function " + quote_name(e.text) +
                           (best.empty() ? "" : "; did you mean " + quote_name(best) + "?"));
  for (const auto& a : e.args) lower_expr(*a);
  return Val::error();
}

Val Lowerer::call_function(const ast::FnDecl& fn, const ast::Expr& call, std::vector<Val> args) {
  // Each inlined call counts as an operation: a body may emit none (it returns its argument, or
  // fails), and a chain of functions each calling the next twice would otherwise take 2^depth
  // calls without reaching the max_ops limit.
  count_op(call.span);
  for (size_t ci = 0; ci < ctx_.size(); ++ci) {
    if (ctx_[ci].decl == &fn) {
      std::string chain;
      for (size_t k = ci; k < ctx_.size(); ++k) chain += cut_name(ctx_[k].decl->name) + " -> ";
      error(call.span, "recursive call of " + quote_name(fn.name) + " (" + chain + cut_name(fn.name) +
                           "); functions are inlined, so recursion is not supported");
      return Val::error();
    }
  }
  if (ctx_.size() > static_cast<size_t>(std::max(0, opts_.limits.max_call_depth))) {
    error(call.span, "calls nested more than " + std::to_string(opts_.limits.max_call_depth) +
                         " deep (the max_call_depth limit)");
    return Val::error();
  }
  if (args.size() != fn.params.size()) {
    error(call.span, quote_name(fn.name) + " takes " + std::to_string(fn.params.size()) + " arguments, " +
                         std::to_string(args.size()) + " given");
    return Val::error();
  }
  for (const auto& a : args)
    if (a.is_error()) return Val::error();

  FnContext callee{&fn, {{}}, {}, {}};
  std::map<std::string, size_t> bound_from;  // symbolic dim -> the argument that bound it
  // Pass 1: plain-name dims of the parameters bind to the arguments' dims.
  std::vector<std::optional<ValueId>> tensors(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const ast::Param& p = fn.params[i];
    if (p.type.dtype == "int") continue;
    auto dt = parse_dtype(p.type.dtype);
    tensors[i] = to_tensor(args[i], dt, call.args[i]->span);
    if (!tensors[i]) return Val::error();
    const ir::Type& at = type_of(*tensors[i]);
    if (at.rank() != p.type.dims.size()) continue;  // reported in pass 2
    for (size_t k = 0; k < at.rank(); ++k) {
      const ast::Expr& d = *p.type.dims[k];
      if (d.kind == ast::ExprKind::Name && !g_.consts.count(d.text) && !callee.dims.count(d.text)) {
        callee.dims[d.text] = at.shape[k];
        bound_from[d.text] = i;
      }
    }
  }
  ctx_.push_back(std::move(callee));
  struct PopCtx {
    std::vector<FnContext>& c;
    ~PopCtx() { c.pop_back(); }
  } pop{ctx_};
  // Pass 2: check every parameter against its argument.
  bool ok = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const ast::Param& p = fn.params[i];
    if (p.type.dtype == "int") {
      expr_span_ = call.args[i]->span;
      auto k = require_int(
          args[i], "argument " + quote_name(p.name) + " of " + quote_name(fn.name) + " (declared int)");
      if (!k) {
        ok = false;
        continue;
      }
      bind(p.name, p.name_span, Val::integer(*k), false);
      continue;
    }
    auto want = resolve_type(p.type, nullptr);
    if (!want) {
      ok = false;
      continue;
    }
    const ir::Type& have = type_of(*tensors[i]);
    if (have != *want) {
      std::string msg = "argument " + std::to_string(i + 1) + " of " + quote_name(fn.name) + " has type " +
                        have.str() + ", but parameter " + quote_name(p.name) + " is declared " +
                        type_text(p.type);
      std::string why;
      for (size_t k = 0; k < have.rank() && k < want->rank(); ++k) {
        const ast::Expr& d = *p.type.dims[k];
        if (have.shape[k] == want->shape[k] || d.kind != ast::ExprKind::Name) continue;
        auto from = bound_from.find(d.text);
        if (from != bound_from.end() && from->second != i)
          why = " with " + cut_name(d.text) + " = " + want->shape[k].str() + " from argument " +
                std::to_string(from->second + 1) + " (" + quote_name(fn.params[from->second].name) + ")";
        break;
      }
      if (why.empty() && type_text(p.type) != want->str()) why = " (here " + want->str() + ")";
      error(call.args[i]->span, msg + why);
      ok = false;
      continue;
    }
    bind(p.name, p.name_span, Val::tensor(*tensors[i], args[i].loop_index), false);
  }
  if (!ok) return Val::error();
  std::vector<ir::Type> results;
  for (const auto& r : fn.results) {
    auto t = resolve_type(r, nullptr);
    if (!t) return Val::error();
    results.push_back(*t);
  }
  Span saved_return = return_span_;
  ValueId saved_pred = pred_;
  Val ret = lower_fn_body(fn, pred_);
  pred_ = saved_pred;
  auto vals = check_results(fn, ret, results);
  return_span_ = saved_return;
  if (vals.size() != results.size()) return Val::error();
  if (!fn.tuple_result) return Val::tensor(vals[0]);
  std::vector<Val> elems;
  for (ValueId v : vals) elems.push_back(Val::tensor(v));
  return Val::tuple(std::move(elems));
}

}  // namespace grape::frontend
