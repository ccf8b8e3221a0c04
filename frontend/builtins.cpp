// Built-in functions: argument checking, shape and dtype rules, and their lowering to IR ops.
// Each builtin's shape rule lives here; its numerics live in runtime/cpu/.
#include <algorithm>
#include <set>

#include "frontend/lowerer.h"

namespace grape::frontend {

using ir::ValueId;

namespace {

const std::set<std::string> kFloatUnary = {"exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu",
                                           "sin", "cos", "floor", "ceil", "round", "gelu"};
const std::set<std::string> kNumericUnary = {"neg", "abs", "relu", "sign"};
const std::set<std::string> kReductions = {"sum", "mean", "max", "min", "prod", "all", "any"};

ir::Op unary_op(const std::string& n) {
  static const std::map<std::string, ir::Op> ops = {
      {"exp", ir::Op::Exp},     {"log", ir::Op::Log},         {"sqrt", ir::Op::Sqrt},   {"rsqrt", ir::Op::Rsqrt},
      {"tanh", ir::Op::Tanh},   {"sigmoid", ir::Op::Sigmoid}, {"silu", ir::Op::Silu},   {"sin", ir::Op::Sin},
      {"cos", ir::Op::Cos},     {"floor", ir::Op::Floor},     {"ceil", ir::Op::Ceil},   {"round", ir::Op::Round},
      {"gelu", ir::Op::Gelu},   {"neg", ir::Op::Neg},         {"abs", ir::Op::Abs},     {"relu", ir::Op::Relu},
      {"sign", ir::Op::Sign},   {"isnan", ir::Op::IsNan},     {"not", ir::Op::Not}};
  return ops.at(n);
}

ir::Op reduction_op(const std::string& n) {
  static const std::map<std::string, ir::Op> ops = {{"sum", ir::Op::Sum}, {"mean", ir::Op::Mean}, {"max", ir::Op::Max},
                                                    {"min", ir::Op::Min}, {"prod", ir::Op::Prod}, {"all", ir::Op::All},
                                                    {"any", ir::Op::Any}};
  return ops.at(n);
}

}  // namespace

std::vector<std::string> Lowerer::builtin_names() {
  std::vector<std::string> n = {"isnan", "not", "maximum", "minimum", "pow", "cast", "where", "zeros", "ones", "full",
                                "arange", "zeros_like", "ones_like", "full_like", "argmax", "argmin", "softmax",
                                "log_softmax", "layer_norm", "rms_norm", "matmul", "linear", "transpose", "permute",
                                "reshape", "expand", "concat", "split", "squeeze", "unsqueeze", "take",
                                "take_along_axis", "topk", "one_hot", "cumsum", "causal_mask"};
  n.insert(n.end(), kFloatUnary.begin(), kFloatUnary.end());
  n.insert(n.end(), kNumericUnary.begin(), kNumericUnary.end());
  n.insert(n.end(), kReductions.begin(), kReductions.end());
  return n;
}

Val Lowerer::elementwise2(ir::Op op, const Val& a, const Val& b, Span span, const std::string& name) {
  if (a.is_error() || b.is_error()) return Val::error();
  std::optional<DType> like;
  if (a.is_tensor()) like = type_of(a.v).dtype;
  else if (b.is_tensor()) like = type_of(b.v).dtype;
  else if (a.kind == Val::Kind::Float || b.kind == Val::Kind::Float) like = DType::F32;
  auto ta = to_tensor(a, like, span), tb = to_tensor(b, like, span);
  if (!ta || !tb) return Val::error();
  const ir::Type &xa = type_of(*ta), &xb = type_of(*tb);
  if (xa.dtype != xb.dtype) {
    error(span, name + ": dtype mismatch: " + xa.str() + " and " + xb.str());
    return Val::error();
  }
  if (xa.dtype == DType::Bool) {
    error(span, name + " is not defined on bool tensors");
    return Val::error();
  }
  auto shape = broadcast_dims(xa.shape, xb.shape);
  if (!shape) {
    error(span, name + ": shapes " + xa.str() + " and " + xb.str() + " cannot be broadcast together");
    return Val::error();
  }
  return Val::tensor(emit(op, {*ta, *tb}, ir::Type{xa.dtype, *shape}, {}, span));
}

// Arguments of one builtin call, lowered, with keyword checking.
class BuiltinLowering {
 public:
  BuiltinLowering(Lowerer& l, const std::string& name, const ast::Expr& e) : l_(l), name_(name), e_(e) {
    for (const auto& a : e.args) pos_.push_back(l.lower_expr(*a));
    for (const auto& k : e.kwargs) {
      Val v = l.lower_expr(*k.value);
      if (kw_.count(k.name)) {
        l.error(k.name_span, "keyword argument " + quote_name(k.name) + " given twice");
        duplicate_ = true;
        continue;
      }
      kw_[k.name] = {v, k.value->span};
      kw_spans_[k.name] = k.name_span;
    }
  }

  bool any_error() const {
    if (duplicate_) return true;
    for (const auto& v : pos_)
      if (v.is_error()) return true;
    for (const auto& [k, v] : kw_)
      if (v.first.is_error()) return true;
    return false;
  }

  // Checks positional count in [lo, hi] and that every keyword is one of `allowed`.
  bool signature(size_t lo, size_t hi, std::set<std::string> allowed, const char* usage) {
    bool ok = true;
    if (pos_.size() < lo || pos_.size() > hi) {
      l_.error(e_.span, name_ + " takes " +
                            (lo == hi ? std::to_string(lo) : std::to_string(lo) + " to " + std::to_string(hi)) +
                            " positional arguments, " + std::to_string(pos_.size()) + " given; usage: " + usage);
      ok = false;
    }
    for (const auto& [k, v] : kw_) {
      if (allowed.count(k)) continue;
      std::string best = closest_name(k, std::vector<std::string>(allowed.begin(), allowed.end()));
      l_.error(kw_spans_.at(k), "unexpected keyword argument " + quote_name(k) + " for " + name_ +
                                    (best.empty() ? "" : "; did you mean " + quote_name(best) + "?"));
      ok = false;
    }
    return ok && !any_error();
  }

  Span span() const { return e_.span; }
  Span arg_span(size_t i) const { return i < e_.args.size() ? e_.args[i]->span : e_.span; }
  const Val& arg(size_t i) const { return pos_[i]; }
  size_t num_args() const { return pos_.size(); }
  bool has(const std::string& k) const { return kw_.count(k) > 0; }
  // A parameter that may be passed positionally at `i` or by keyword.
  std::optional<std::pair<Val, Span>> param(size_t i, const std::string& k) const {
    if (i < pos_.size()) return std::make_pair(pos_[i], arg_span(i));
    auto it = kw_.find(k);
    if (it != kw_.end()) return it->second;
    return std::nullopt;
  }

  std::optional<ValueId> tensor(size_t i, std::optional<DType> like = std::nullopt) {
    return l_.to_tensor(pos_[i], like, arg_span(i));
  }
  std::optional<int64_t> int_param(size_t i, const std::string& k, std::optional<int64_t> dflt) {
    auto p = param(i, k);
    if (!p) {
      if (!dflt) l_.error(e_.span, name_ + " needs the argument " + quote_name(k));
      return dflt;
    }
    l_.expr_span_ = p->second;
    return l_.require_int(p->first, name_ + "'s " + quote_name(k));
  }
  std::optional<bool> bool_param(const std::string& k, bool dflt) {
    auto it = kw_.find(k);
    if (it == kw_.end()) return dflt;
    if (it->second.first.kind != Val::Kind::Bool) {
      l_.error(it->second.second, name_ + "'s " + quote_name(k) + " must be true or false");
      return std::nullopt;
    }
    return it->second.first.i != 0;
  }
  std::optional<double> number_param(const std::string& k, double dflt) {
    auto it = kw_.find(k);
    if (it == kw_.end()) return dflt;
    const Val& v = it->second.first;
    if (v.kind == Val::Kind::Float) return v.f;
    if (v.kind == Val::Kind::Int) return static_cast<double>(v.i);
    l_.error(it->second.second, name_ + "'s " + quote_name(k) + " must be a number literal");
    return std::nullopt;
  }
  std::optional<DType> dtype_param(size_t i, const std::string& k, std::optional<DType> dflt) {
    auto p = param(i, k);
    if (!p) {
      if (!dflt) l_.error(e_.span, name_ + " needs a dtype argument (f32, f16, bf16, i32, i64 or bool)");
      return dflt;
    }
    if (p->first.kind != Val::Kind::DType) {
      l_.error(p->second, name_ + " expects a dtype here (f32, f16, bf16, i32, i64 or bool)");
      return std::nullopt;
    }
    return p->first.dtype;
  }
  // A shape: one dim or a tuple of dims (ints or symbolic dimensions).
  std::optional<std::vector<ir::Dim>> shape_of(const Val& v, Span span) {
    std::vector<Val> elems = v.kind == Val::Kind::Tuple ? v.elems : std::vector<Val>{v};
    std::vector<ir::Dim> out;
    for (const auto& x : elems) {
      l_.expr_span_ = span;
      auto d = l_.require_dim(x, name_ + "'s shape");
      if (!d) return std::nullopt;
      if (d->is_const() && d->const_value() < 0) {
        l_.error(span, name_ + ": negative dimension " + d->str() + " in a shape");
        return std::nullopt;
      }
      out.push_back(*d);
    }
    return out;
  }
  // A normalised axis of a tensor of rank `rank`.
  std::optional<int64_t> axis(const Val& v, Span span, size_t rank) {
    l_.expr_span_ = span;
    auto a = l_.require_int(v, name_ + "'s axis");
    if (!a) return std::nullopt;
    int64_t r = static_cast<int64_t>(rank);
    if (*a < -r || *a >= r) {
      l_.error(span, name_ + ": axis " + std::to_string(*a) + " is out of range for rank " + std::to_string(rank));
      return std::nullopt;
    }
    return *a < 0 ? *a + r : *a;
  }
  std::optional<int64_t> axis_param(size_t i, const std::string& k, std::optional<int64_t> dflt, size_t rank) {
    auto p = param(i, k);
    if (!p) {
      if (!dflt) {
        l_.error(e_.span, name_ + " needs axis=");
        return std::nullopt;
      }
      return axis(Val::integer(*dflt), e_.span, rank);
    }
    return axis(p->first, p->second, rank);
  }

 private:
  Lowerer& l_;
  std::string name_;
  const ast::Expr& e_;
  std::vector<Val> pos_;
  std::map<std::string, std::pair<Val, Span>> kw_;
  std::map<std::string, Span> kw_spans_;
  bool duplicate_ = false;
};

static ir::Attrs attrs_with_dtype(DType t) {
  ir::Attrs a;
  a.dtype = t;
  return a;
}

std::optional<Val> Lowerer::lower_builtin(const std::string& name, const ast::Expr& e) {
  auto names = builtin_names();
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::nullopt;
  BuiltinLowering c(*this, name, e);
  Span sp = e.span;
  auto fail = [&]() { return Val::error(); };

  if (kFloatUnary.count(name) || kNumericUnary.count(name) || name == "isnan" || name == "not") {
    if (!c.signature(1, 1, name == "gelu" ? std::set<std::string>{"approximate"} : std::set<std::string>{},
                     (name + "(x)").c_str()))
      return fail();
    auto x = c.tensor(0, kFloatUnary.count(name) ? std::optional<DType>(DType::F32) : std::nullopt);
    if (!x) return fail();
    ir::Type t = type_of(*x);
    if (kFloatUnary.count(name) && !is_float(t.dtype)) {
      error(c.arg_span(0), name + " needs a float tensor, got " + t.str() + "; convert it with cast(x, f32)");
      return fail();
    }
    if ((kNumericUnary.count(name) || name == "isnan") && t.dtype == DType::Bool) {
      error(c.arg_span(0), name + " is not defined on bool tensors");
      return fail();
    }
    if (name == "not" && t.dtype != DType::Bool) {
      error(c.arg_span(0), "not needs a bool tensor, got " + t.str());
      return fail();
    }
    ir::Attrs a;
    if (name == "gelu" && c.has("approximate")) {
      auto p = c.param(99, "approximate");
      if (p->first.kind != Val::Kind::String || (p->first.text != "tanh" && p->first.text != "none")) {
        error(p->second, "gelu's approximate must be \"tanh\" or \"none\"");
        return fail();
      }
      a.approx_tanh = p->first.text == "tanh";
    }
    if (name == "isnan") t.dtype = DType::Bool;
    return Val::tensor(emit(unary_op(name), {*x}, t, a, sp));
  }

  if (name == "maximum" || name == "minimum" || name == "pow") {
    if (!c.signature(2, 2, {}, (name + "(a, b)").c_str())) return fail();
    ir::Op op = name == "maximum" ? ir::Op::Maximum : name == "minimum" ? ir::Op::Minimum : ir::Op::Pow;
    return elementwise2(op, c.arg(0), c.arg(1), sp, name);
  }

  if (name == "cast") {
    if (!c.signature(1, 2, {"dtype"}, "cast(x, DTYPE)")) return fail();
    auto dt = c.dtype_param(1, "dtype", std::nullopt);
    auto x = c.tensor(0);
    if (!dt || !x) return fail();
    ir::Type t = type_of(*x);
    if (t.dtype == *dt) return Val::tensor(*x);
    t.dtype = *dt;
    return Val::tensor(emit(ir::Op::Cast, {*x}, t, attrs_with_dtype(*dt), sp));
  }

  if (name == "where") {
    if (!c.signature(3, 3, {}, "where(cond, a, b)")) return fail();
    auto cond = c.tensor(0, DType::Bool);
    if (!cond) return fail();
    if (type_of(*cond).dtype != DType::Bool) {
      error(c.arg_span(0), "where's condition must be a bool tensor, got " + type_str(*cond));
      return fail();
    }
    std::optional<DType> like;
    if (c.arg(1).is_tensor()) like = type_of(c.arg(1).v).dtype;
    else if (c.arg(2).is_tensor()) like = type_of(c.arg(2).v).dtype;
    auto a = c.tensor(1, like), b = c.tensor(2, like);
    if (!a || !b) return fail();
    if (type_of(*a).dtype != type_of(*b).dtype) {
      error(sp, "where: dtype mismatch between " + type_str(*a) + " and " + type_str(*b));
      return fail();
    }
    auto s1 = broadcast_dims(type_of(*cond).shape, type_of(*a).shape);
    auto s2 = s1 ? broadcast_dims(*s1, type_of(*b).shape) : std::nullopt;
    if (!s2) {
      error(sp, "where: shapes " + type_str(*cond) + ", " + type_str(*a) + " and " + type_str(*b) +
                    " cannot be broadcast together");
      return fail();
    }
    return Val::tensor(emit(ir::Op::Where, {*cond, *a, *b}, ir::Type{type_of(*a).dtype, *s2}, {}, sp));
  }

  if (name == "zeros" || name == "ones" || name == "full" || name == "arange") {
    bool is_full = name == "full";
    const char* usage = is_full ? "full(shape, value, DTYPE)" : name == "arange" ? "arange(n, DTYPE)" : "zeros(shape, DTYPE)";
    if (!c.signature(1, is_full ? 3 : 2, {"dtype"}, usage)) return fail();
    auto shape = c.shape_of(c.arg(0), c.arg_span(0));
    std::optional<DType> dt = c.dtype_param(is_full ? 2 : 1, "dtype", name == "arange" ? DType::I32 : DType::F32);
    if (!shape || !dt) return fail();
    if (name == "arange") {
      if (shape->size() != 1) {
        error(c.arg_span(0), "arange takes one length");
        return fail();
      }
      ir::Attrs a = attrs_with_dtype(*dt);
      a.shape = *shape;
      return Val::tensor(emit(ir::Op::Arange, {}, ir::Type{*dt, *shape}, a, sp));
    }
    ir::Attrs a = attrs_with_dtype(*dt);
    a.shape = *shape;
    if (is_full) {
      if (c.num_args() < 2) {
        error(sp, "full needs a fill value: full(shape, value, DTYPE)");
        return fail();
      }
      const Val& v = c.arg(1);
      if (v.is_tensor() || v.kind == Val::Kind::Dim) {
        auto t = c.tensor(1, *dt);
        if (!t) return fail();
        if (type_of(*t).rank() != 0 || type_of(*t).dtype != *dt) {
          error(c.arg_span(1), "full's value must be a scalar of the requested dtype, got " + type_str(*t));
          return fail();
        }
        return Val::tensor(emit(ir::Op::Expand, {*t}, ir::Type{*dt, *shape}, a, sp));
      }
      if (v.kind == Val::Kind::Float && !is_float(*dt)) {
        error(c.arg_span(1), std::string("a float fill value for a ") + dtype_name(*dt) + " tensor");
        return fail();
      }
      if (v.kind == Val::Kind::Float) a.fvalue = v.f;
      else if (v.kind == Val::Kind::Int || v.kind == Val::Kind::Bool) {
        if (is_float(*dt)) a.fvalue = static_cast<double>(v.i);
        else a.ivalue = v.i;
      } else {
        error(c.arg_span(1), "full's value must be a number or a scalar tensor");
        return fail();
      }
    } else if (name == "ones") {
      if (is_float(*dt)) a.fvalue = 1;
      else a.ivalue = 1;
    }
    // A fill reads nothing and writes only its own result, so it is never predicated: computed
    // under a branch's predicate its value would be undefined where the predicate is false, and a
    // copy of it under another predicate would end a block sequence (scheduler/plan.cpp copies a
    // loop's initial value under the predicate of the op that computes it).
    return Val::tensor(emit(ir::Op::Full, {}, ir::Type{*dt, *shape}, a, sp, false));
  }

  if (name == "zeros_like" || name == "ones_like" || name == "full_like") {
    bool is_full = name == "full_like";
    if (!c.signature(is_full ? 2 : 1, is_full ? 2 : 1, {}, is_full ? "full_like(x, value)" : "zeros_like(x)")) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    ir::Attrs a = attrs_with_dtype(t.dtype);
    a.shape = t.shape;
    double v = name == "ones_like" ? 1 : 0;
    if (is_full) {
      const Val& fv = c.arg(1);
      if (fv.kind == Val::Kind::Float) v = fv.f;
      else if (fv.kind == Val::Kind::Int || fv.kind == Val::Kind::Bool) v = static_cast<double>(fv.i);
      else {
        error(c.arg_span(1), "full_like's value must be a number literal");
        return fail();
      }
    }
    if (is_float(t.dtype)) a.fvalue = v;
    else a.ivalue = static_cast<int64_t>(v);
    return Val::tensor(emit(ir::Op::Full, {}, t, a, sp, false));  // never predicated (see full)
  }

  if (kReductions.count(name) || name == "argmax" || name == "argmin") {
    bool arg = name == "argmax" || name == "argmin";
    if (!c.signature(1, 2, {"axis", "keepdims"}, (name + "(x, axis=..., keepdims=false)").c_str())) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    auto keep = c.bool_param("keepdims", false);
    if (!keep) return fail();
    if ((name == "all" || name == "any") && t.dtype != DType::Bool) {
      error(c.arg_span(0), name + " needs a bool tensor, got " + t.str() + "; compare it first (e.g. x > 0)");
      return fail();
    }
    if (name != "all" && name != "any" && t.dtype == DType::Bool) {
      error(c.arg_span(0), name + " is not defined on bool tensors; use any/all or cast(x, i32)");
      return fail();
    }
    if (name == "mean" && !is_float(t.dtype)) {
      error(c.arg_span(0), "mean needs a float tensor, got " + t.str());
      return fail();
    }
    std::vector<int64_t> axes;
    auto p = c.param(1, "axis");
    if (p) {
      std::vector<Val> items = p->first.kind == Val::Kind::Tuple ? p->first.elems : std::vector<Val>{p->first};
      for (const auto& it : items) {
        auto ax = c.axis(it, p->second, t.rank());
        if (!ax) return fail();
        axes.push_back(*ax);
      }
      std::sort(axes.begin(), axes.end());
      if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
        error(p->second, name + ": an axis is repeated");
        return fail();
      }
    } else if (arg) {
      if (t.rank() > 1) {
        error(sp, name + " of " + t.str() + " needs axis= (one axis)");
        return fail();
      }
      if (t.rank() == 1) axes = {0};
    } else {
      for (size_t i = 0; i < t.rank(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (arg && axes.size() != 1) {
      error(sp, name + " takes exactly one axis");
      return fail();
    }
    if (arg && !axes.empty()) {
      const ir::Dim& d = t.shape[static_cast<size_t>(axes[0])];
      if (d.is_const(0)) {
        error(sp, name + " over an empty axis");
        return fail();
      }
    }
    std::vector<ir::Dim> shape;
    for (size_t i = 0; i < t.rank(); ++i) {
      bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) != axes.end();
      if (!reduced) shape.push_back(t.shape[i]);
      else if (*keep) shape.push_back(ir::Dim(1));
    }
    ir::Attrs a;
    a.keepdims = *keep;
    if (arg) {
      a.axis = axes.empty() ? 0 : axes[0];
      if (t.rank() == 0) return Val::tensor(constant(DType::I32, 0, sp));
      return Val::tensor(emit(name == "argmax" ? ir::Op::ArgMax : ir::Op::ArgMin, {*x}, ir::Type{DType::I32, shape}, a, sp));
    }
    a.axes = axes;
    return Val::tensor(emit(reduction_op(name), {*x}, ir::Type{t.dtype, shape}, a, sp));
  }

  if (name == "softmax" || name == "log_softmax" || name == "cumsum") {
    if (!c.signature(1, 2, {"axis"}, (name + "(x, axis=-1)").c_str())) return fail();
    auto x = c.tensor(0, DType::F32);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    if (name != "cumsum" && !is_float(t.dtype)) {
      error(c.arg_span(0), name + " needs a float tensor, got " + t.str());
      return fail();
    }
    if (name == "cumsum" && t.dtype == DType::Bool) {
      error(c.arg_span(0), "cumsum is not defined on bool tensors");
      return fail();
    }
    if (t.rank() == 0) {
      error(c.arg_span(0), name + " needs a tensor of rank >= 1");
      return fail();
    }
    auto ax = c.axis_param(1, "axis", name == "cumsum" && t.rank() > 1 ? std::nullopt : std::optional<int64_t>(-1), t.rank());
    if (!ax) return fail();
    ir::Attrs a;
    a.axis = *ax;
    ir::Op op = name == "softmax" ? ir::Op::Softmax : name == "log_softmax" ? ir::Op::LogSoftmax : ir::Op::CumSum;
    return Val::tensor(emit(op, {*x}, t, a, sp));
  }

  if (name == "layer_norm" || name == "rms_norm") {
    bool ln = name == "layer_norm";
    if (!c.signature(ln ? 3 : 2, ln ? 3 : 2, {"eps"}, ln ? "layer_norm(x, g, b, eps=1e-5)" : "rms_norm(x, g, eps=1e-6)"))
      return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    if (!is_float(t.dtype) || t.rank() == 0) {
      error(c.arg_span(0), name + " needs a float tensor of rank >= 1, got " + t.str());
      return fail();
    }
    ir::Type param{t.dtype, {t.shape.back()}};
    std::vector<ValueId> ops{*x};
    for (size_t i = 1; i < (ln ? 3u : 2u); ++i) {
      auto p = c.tensor(i, t.dtype);
      if (!p) return fail();
      if (type_of(*p) != param) {
        error(c.arg_span(i), name + ": expected " + param.str() + " (the last dim of " + t.str() + "), got " + type_str(*p));
        return fail();
      }
      ops.push_back(*p);
    }
    auto eps = c.number_param("eps", ln ? 1e-5 : 1e-6);
    if (!eps) return fail();
    ir::Attrs a;
    a.eps = *eps;
    return Val::tensor(emit(ln ? ir::Op::LayerNorm : ir::Op::RmsNorm, ops, t, a, sp));
  }

  if (name == "matmul") {
    if (!c.signature(2, 2, {}, "matmul(a, b)")) return fail();
    return lower_binary(ast::BinaryOp::MatMul, c.arg(0), c.arg(1), sp);
  }

  if (name == "linear") {
    if (!c.signature(2, 3, {}, "linear(x, w[out, in], b[out])")) return fail();
    auto x = c.tensor(0);
    auto w = c.tensor(1);
    if (!x || !w) return fail();
    const ir::Type tx = type_of(*x), tw = type_of(*w);
    if (tx.rank() == 0 || tw.rank() != 2 || tx.dtype != tw.dtype || tx.shape.back() != tw.shape[1]) {
      error(sp, "linear: expected x[..., in] and w[out, in] of the same dtype, got " + tx.str() + " and " + tw.str());
      return fail();
    }
    std::vector<ValueId> ops{*x, *w};
    if (c.num_args() == 3) {
      auto b = c.tensor(2, tx.dtype);
      if (!b) return fail();
      ir::Type want{tx.dtype, {tw.shape[0]}};
      if (type_of(*b) != want) {
        error(c.arg_span(2), "linear: bias must be " + want.str() + ", got " + type_str(*b));
        return fail();
      }
      ops.push_back(*b);
    }
    std::vector<ir::Dim> shape = tx.shape;
    shape.back() = tw.shape[0];
    return Val::tensor(emit(ir::Op::Linear, ops, ir::Type{tx.dtype, shape}, {}, sp));
  }

  if (name == "transpose" || name == "permute") {
    bool tr = name == "transpose";
    if (!c.signature(tr ? 3 : 2, tr ? 3 : 2, {}, tr ? "transpose(x, a, b)" : "permute(x, (axes...))")) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    std::vector<int64_t> perm(t.rank());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    if (tr) {
      auto a = c.axis(c.arg(1), c.arg_span(1), t.rank()), b = c.axis(c.arg(2), c.arg_span(2), t.rank());
      if (!a || !b) return fail();
      std::swap(perm[static_cast<size_t>(*a)], perm[static_cast<size_t>(*b)]);
    } else {
      const Val& p = c.arg(1);
      std::vector<Val> items = p.kind == Val::Kind::Tuple ? p.elems : std::vector<Val>{p};
      if (items.size() != t.rank()) {
        error(c.arg_span(1), "permute of " + t.str() + " needs " + std::to_string(t.rank()) + " axes");
        return fail();
      }
      std::vector<bool> seen(t.rank(), false);
      for (size_t i = 0; i < items.size(); ++i) {
        auto a = c.axis(items[i], c.arg_span(1), t.rank());
        if (!a) return fail();
        if (seen[static_cast<size_t>(*a)]) {
          error(c.arg_span(1), "permute: axis " + std::to_string(*a) + " appears twice");
          return fail();
        }
        seen[static_cast<size_t>(*a)] = true;
        perm[i] = *a;
      }
    }
    std::vector<ir::Dim> shape;
    for (int64_t p : perm) shape.push_back(t.shape[static_cast<size_t>(p)]);
    ir::Attrs a;
    a.axes = perm;
    return Val::tensor(emit(ir::Op::Permute, {*x}, ir::Type{t.dtype, shape}, a, sp));
  }

  if (name == "reshape" || name == "expand") {
    if (!c.signature(2, 2, {}, (name + "(x, (dims...))").c_str())) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    const Val& sv = c.arg(1);
    std::vector<Val> items = sv.kind == Val::Kind::Tuple ? sv.elems : std::vector<Val>{sv};
    std::vector<ir::Dim> shape;
    int infer = -1;
    for (size_t i = 0; i < items.size(); ++i) {
      if (name == "reshape" && items[i].kind == Val::Kind::Int && items[i].i == -1) {
        if (infer >= 0) {
          error(c.arg_span(1), "reshape: only one -1 is allowed");
          return fail();
        }
        infer = static_cast<int>(i);
        shape.push_back(ir::Dim(1));
        continue;
      }
      expr_span_ = c.arg_span(1);
      auto d = require_dim(items[i], name + "'s shape");
      if (!d) return fail();
      if (d->is_const() && d->const_value() < 0) {
        error(c.arg_span(1), name + ": negative dimension " + d->str());
        return fail();
      }
      shape.push_back(*d);
    }
    ir::Dim total(1), known(1);
    for (const auto& d : t.shape) total = total * d;
    for (const auto& d : shape) known = known * d;
    if (name == "reshape") {
      if (infer >= 0) {
        auto q = ir::Dim::div(total, known);
        if (!q) {
          error(c.arg_span(1), "reshape: " + t.str() + " has " + total.str() + " elements, not divisible by " + known.str());
          return fail();
        }
        shape[static_cast<size_t>(infer)] = *q;
        known = total;
      }
      if (known != total && known.is_const() && total.is_const()) {
        error(c.arg_span(1), "reshape: cannot reshape " + t.str() + " (" + total.str() + " elements) to [" +
                                 ir::dims_to_string(shape) + "] (" + known.str() + " elements)");
        return fail();
      }
      if (known != total) {
        error(c.arg_span(1), "reshape: cannot prove that " + t.str() + " and [" + ir::dims_to_string(shape) +
                                 "] have the same number of elements (" + total.str() + " vs " + known.str() + ")");
        return fail();
      }
    } else {
      auto b = broadcast_dims(t.shape, shape);
      if (!b || *b != shape) {
        error(sp, "expand: cannot broadcast " + t.str() + " to [" + ir::dims_to_string(shape) + "]");
        return fail();
      }
    }
    ir::Attrs a;
    a.shape = shape;
    return Val::tensor(emit(name == "reshape" ? ir::Op::Reshape : ir::Op::Expand, {*x}, ir::Type{t.dtype, shape}, a, sp));
  }

  if (name == "squeeze" || name == "unsqueeze") {
    bool sq = name == "squeeze";
    if (!c.signature(1, 2, {"axis"}, sq ? "squeeze(x, axis=...)" : "unsqueeze(x, axis)")) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    std::vector<ir::Dim> shape = t.shape;
    if (sq) {
      auto p = c.param(1, "axis");
      if (!p) {
        shape.clear();
        for (const auto& d : t.shape)
          if (!d.is_const(1)) shape.push_back(d);
      } else {
        auto ax = c.axis(p->first, p->second, t.rank());
        if (!ax) return fail();
        if (!t.shape[static_cast<size_t>(*ax)].is_const(1)) {
          error(p->second, "squeeze: axis " + std::to_string(*ax) + " of " + t.str() + " does not have size 1");
          return fail();
        }
        shape.erase(shape.begin() + *ax);
      }
    } else {
      auto ax = c.axis_param(1, "axis", std::nullopt, t.rank() + 1);
      if (!ax) return fail();
      shape.insert(shape.begin() + *ax, ir::Dim(1));
    }
    ir::Attrs a;
    a.shape = shape;
    return Val::tensor(emit(ir::Op::Reshape, {*x}, ir::Type{t.dtype, shape}, a, sp));
  }

  if (name == "concat") {
    if (!c.signature(1, 2, {"axis"}, "concat((a, b, ...), axis=0)")) return fail();
    if (c.arg(0).kind != Val::Kind::Tuple || c.arg(0).elems.empty()) {
      error(c.arg_span(0), "concat takes a tuple of tensors: concat((a, b), axis=0)");
      return fail();
    }
    std::vector<ValueId> parts;
    for (const auto& v : c.arg(0).elems) {
      auto t = to_tensor(v, std::nullopt, c.arg_span(0));
      if (!t) return fail();
      parts.push_back(*t);
    }
    const ir::Type first = type_of(parts[0]);
    if (first.rank() == 0) {
      error(c.arg_span(0), "concat: cannot concatenate scalars; reshape them to [1] first");
      return fail();
    }
    auto ax = c.axis_param(1, "axis", 0, first.rank());
    if (!ax) return fail();
    ir::Dim total(0);
    for (ValueId p : parts) {
      const ir::Type& t = type_of(p);
      bool ok = t.dtype == first.dtype && t.rank() == first.rank();
      for (size_t i = 0; ok && i < t.rank(); ++i)
        if (static_cast<int64_t>(i) != *ax && t.shape[i] != first.shape[i]) ok = false;
      if (!ok) {
        error(c.arg_span(0), "concat: " + t.str() + " does not match " + first.str() + " outside axis " + std::to_string(*ax));
        return fail();
      }
      total = total + t.shape[static_cast<size_t>(*ax)];
    }
    std::vector<ir::Dim> shape = first.shape;
    shape[static_cast<size_t>(*ax)] = total;
    ir::Attrs a;
    a.axis = *ax;
    return Val::tensor(emit(ir::Op::Concat, parts, ir::Type{first.dtype, shape}, a, sp));
  }

  if (name == "split") {
    if (!c.signature(2, 3, {"axis"}, "split(x, n, axis=0)")) return fail();
    auto x = c.tensor(0);
    if (!x) return fail();
    const ir::Type t = type_of(*x);
    if (t.rank() == 0) {
      error(c.arg_span(0), "split needs a tensor of rank >= 1");
      return fail();
    }
    auto ax = c.axis_param(2, "axis", 0, t.rank());
    expr_span_ = c.arg_span(1);
    auto n = require_int(c.arg(1), "split's number of parts");
    if (!ax || !n) return fail();
    if (*n <= 0) {
      error(c.arg_span(1), "split: the number of parts must be positive");
      return fail();
    }
    const ir::Dim& d = t.shape[static_cast<size_t>(*ax)];
    auto part = ir::Dim::div(d, ir::Dim(*n));
    if (!part) {
      error(c.arg_span(1), "split: axis " + std::to_string(*ax) + " of " + t.str() + " is not divisible into " +
                               std::to_string(*n) + " equal parts");
      return fail();
    }
    std::vector<Val> out;
    for (int64_t i = 0; i < *n; ++i) {
      ir::Attrs a;
      std::vector<ir::Dim> shape = t.shape;
      for (size_t k = 0; k < t.rank(); ++k) {
        ir::SliceAxis s;
        s.start = static_cast<int64_t>(k) == *ax ? *part * ir::Dim(i) : ir::Dim(0);
        s.size = static_cast<int64_t>(k) == *ax ? *part : t.shape[k];
        a.slices.push_back(s);
      }
      shape[static_cast<size_t>(*ax)] = *part;
      out.push_back(Val::tensor(emit(ir::Op::Slice, {*x}, ir::Type{t.dtype, shape}, a, sp)));
    }
    return Val::tuple(std::move(out));
  }

  if (name == "take" || name == "take_along_axis") {
    bool along = name == "take_along_axis";
    if (!c.signature(2, 3, {"axis"}, along ? "take_along_axis(x, idx, axis=...)" : "take(x, idx, axis=0)")) return fail();
    auto x = c.tensor(0);
    auto idx = c.tensor(1, DType::I32);
    if (!x || !idx) return fail();
    const ir::Type t = type_of(*x), it = type_of(*idx);
    if (!is_int(it.dtype)) {
      error(c.arg_span(1), name + ": indices must be i32 or i64, got " + it.str());
      return fail();
    }
    if (t.rank() == 0) {
      error(c.arg_span(0), name + " needs a tensor of rank >= 1");
      return fail();
    }
    auto ax = c.axis_param(2, "axis", along ? std::nullopt : std::optional<int64_t>(0), t.rank());
    if (!ax) return fail();
    size_t a_ = static_cast<size_t>(*ax);
    std::vector<ir::Dim> shape;
    if (!along) {
      shape.assign(t.shape.begin(), t.shape.begin() + *ax);
      shape.insert(shape.end(), it.shape.begin(), it.shape.end());
      shape.insert(shape.end(), t.shape.begin() + *ax + 1, t.shape.end());
    } else {
      if (it.rank() != t.rank()) {
        error(c.arg_span(1), "take_along_axis: indices " + it.str() + " must have the rank of " + t.str());
        return fail();
      }
      for (size_t i = 0; i < t.rank(); ++i) {
        if (i == a_) {
          shape.push_back(it.shape[i]);
          continue;
        }
        auto b = broadcast_dims({t.shape[i]}, {it.shape[i]});
        if (!b) {
          error(c.arg_span(1), "take_along_axis: indices " + it.str() + " do not broadcast against " + t.str());
          return fail();
        }
        shape.push_back((*b)[0]);
      }
    }
    ir::Attrs a;
    a.axis = *ax;
    return Val::tensor(emit(along ? ir::Op::TakeAlongAxis : ir::Op::Take, {*x, *idx}, ir::Type{t.dtype, shape}, a, sp));
  }

  if (name == "topk") {
    if (!c.signature(2, 3, {"axis"}, "topk(x, k, axis=-1)")) return fail();
    auto x = c.tensor(0);
    expr_span_ = c.arg_span(1);
    auto k = require_int(c.arg(1), "topk's k");
    if (!x || !k) return fail();
    const ir::Type t = type_of(*x);
    if (t.rank() == 0 || t.dtype == DType::Bool) {
      error(c.arg_span(0), "topk needs a numeric tensor of rank >= 1, got " + t.str());
      return fail();
    }
    auto ax = c.axis_param(2, "axis", -1, t.rank());
    if (!ax) return fail();
    const ir::Dim& d = t.shape[static_cast<size_t>(*ax)];
    if (*k < 0 || (d.is_const() && *k > d.const_value())) {
      error(c.arg_span(1), "topk: k = " + std::to_string(*k) + " is out of range for a dimension of size " + d.str());
      return fail();
    }
    std::vector<ir::Dim> shape = t.shape;
    shape[static_cast<size_t>(*ax)] = ir::Dim(*k);
    ir::Attrs a;
    a.axis = *ax;
    a.k = *k;
    auto r = emit_multi(ir::Op::TopK, {*x}, {ir::Type{t.dtype, shape}, ir::Type{DType::I32, shape}}, a, sp);
    return Val::tuple({Val::tensor(r[0]), Val::tensor(r[1])});
  }

  if (name == "one_hot") {
    if (!c.signature(2, 3, {"dtype"}, "one_hot(idx, n, DTYPE=f32)")) return fail();
    auto idx = c.tensor(0, DType::I32);
    expr_span_ = c.arg_span(1);
    auto n = require_int(c.arg(1), "one_hot's number of classes");
    auto dt = c.dtype_param(2, "dtype", DType::F32);
    if (!idx || !n || !dt) return fail();
    const ir::Type it = type_of(*idx);
    if (!is_int(it.dtype) || *n < 0) {
      error(sp, "one_hot needs integer indices and a non-negative class count");
      return fail();
    }
    std::vector<ir::Dim> shape = it.shape;
    shape.push_back(ir::Dim(*n));
    ir::Attrs a = attrs_with_dtype(*dt);
    a.k = *n;
    return Val::tensor(emit(ir::Op::OneHot, {*idx}, ir::Type{*dt, shape}, a, sp));
  }

  if (name == "causal_mask") {
    if (!c.signature(2, 3, {"offset"}, "causal_mask(S, T, offset=0)")) return fail();
    expr_span_ = c.arg_span(0);
    auto s = require_dim(c.arg(0), "causal_mask's S");
    expr_span_ = c.arg_span(1);
    auto t = require_dim(c.arg(1), "causal_mask's T");
    if (!s || !t) return fail();
    auto off = c.param(2, "offset");
    std::optional<ValueId> ov = off ? to_tensor(off->first, DType::I32, off->second) : constant(DType::I32, 0, sp);
    if (!ov) return fail();
    const ir::Type& ot = type_of(*ov);
    if (ot.rank() != 0 || !is_int(ot.dtype)) {
      error(off ? off->second : sp, "causal_mask's offset must be an integer scalar, got " + ot.str());
      return fail();
    }
    ir::Attrs a;
    a.shape = {*s, *t};
    return Val::tensor(emit(ir::Op::CausalMask, {*ov}, ir::Type{DType::Bool, {*s, *t}}, a, sp));
  }

  return std::nullopt;
}

}  // namespace grape::frontend
