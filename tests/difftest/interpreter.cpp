#include "tests/difftest/interpreter.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ir/dtype.h"
#include "ir/op.h"
#include "lang/diagnostics.h"
#include "lang/parse.h"
#include "runtime/cpu/kernels.h"

namespace grape::difftest {

namespace {

// A value of the interpreter. `literal` marks an untyped literal (or a const used as a value):
// next to a tensor it takes the tensor's dtype, as the language specifies.
struct Value {
  Tensor t;
  bool literal = false;
};

enum class Flow { Normal, Break, Continue, Return };

struct Binding {
  Value v;
  bool is_mutable = false;
};

struct Frame {
  std::vector<std::map<std::string, Binding>> scopes;
  std::map<std::string, int64_t> dims;  // symbolic dims bound by this function's signature
  std::vector<Value> ret;
};

std::string where_str(const Span& s) {
  return std::to_string(s.begin.line) + ":" + std::to_string(s.begin.column);
}

[[noreturn]] void unsupported(const Span& s, const std::string& what) {
  throw InterpError("difftest interpreter: " + where_str(s) + ": " + what);
}

Tensor run1(ir::Op op, const std::vector<Tensor>& in, const cpu::KernelAttrs& attrs = {}) {
  std::vector<Tensor> out = cpu::run_kernel(op, in, attrs);
  if (out.size() != 1) throw InterpError(std::string("kernel ") + ir::op_name(op) + " returned no single result");
  return out[0];
}

Tensor cast_to(const Tensor& t, DType d) {
  if (t.dtype() == d) return t;
  cpu::KernelAttrs a;
  a.dtype = d;
  return run1(ir::Op::Cast, {t}, a);
}

Value coerce(const Value& v, DType d) {
  if (!v.literal || v.t.dtype() == d) return v;
  return Value{cast_to(v.t, d), true};
}

// Makes the dtypes of two operands agree where one (or both) is a literal.
void unify_literals(Value& a, Value& b) {
  if (a.literal && !b.literal) {
    a = coerce(a, b.t.dtype());
  } else if (b.literal && !a.literal) {
    b = coerce(b, a.t.dtype());
  } else if (a.literal && b.literal && a.t.dtype() != b.t.dtype()) {
    DType d = is_float(a.t.dtype()) ? a.t.dtype() : is_float(b.t.dtype()) ? b.t.dtype() : DType::I32;
    a = coerce(a, d);
    b = coerce(b, d);
  }
}

ir::Op binary_ir_op(ast::BinaryOp op) {
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

bool is_arith(ast::BinaryOp op) {
  switch (op) {
    case ast::BinaryOp::Add: case ast::BinaryOp::Sub: case ast::BinaryOp::Mul:
    case ast::BinaryOp::Div: case ast::BinaryOp::Mod:
      return true;
    default:
      return false;
  }
}

// Elementwise unary builtins by their .grp name.
std::optional<ir::Op> unary_builtin(const std::string& n) {
  static const std::map<std::string, ir::Op> m = {
      {"neg", ir::Op::Neg},   {"abs", ir::Op::Abs},       {"exp", ir::Op::Exp},
      {"log", ir::Op::Log},   {"sqrt", ir::Op::Sqrt},     {"rsqrt", ir::Op::Rsqrt},
      {"tanh", ir::Op::Tanh}, {"sigmoid", ir::Op::Sigmoid}, {"relu", ir::Op::Relu},
      {"silu", ir::Op::Silu}, {"sin", ir::Op::Sin},       {"cos", ir::Op::Cos},
      {"floor", ir::Op::Floor}, {"ceil", ir::Op::Ceil},   {"round", ir::Op::Round},
      {"sign", ir::Op::Sign}, {"isnan", ir::Op::IsNan},   {"not", ir::Op::Not},
  };
  auto it = m.find(n);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::optional<ir::Op> reduction_builtin(const std::string& n) {
  static const std::map<std::string, ir::Op> m = {
      {"sum", ir::Op::Sum}, {"mean", ir::Op::Mean}, {"max", ir::Op::Max}, {"min", ir::Op::Min},
      {"prod", ir::Op::Prod}, {"all", ir::Op::All}, {"any", ir::Op::Any},
  };
  auto it = m.find(n);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

bool truthy(const Value& v, const Span& s) {
  if (v.t.numel() != 1) unsupported(s, "condition is not a scalar: shape " + shape_to_string(v.t.shape()));
  return v.t.get(0) != 0;
}

int64_t norm_axis(int64_t a, size_t rank, const Span& s) {
  int64_t r = static_cast<int64_t>(rank);
  if (a < 0) a += r;
  if (a < 0 || a >= std::max<int64_t>(r, 1)) unsupported(s, "axis out of range");
  return a;
}

}  // namespace

struct Interpreter::Impl {
  ast::Program prog;
  std::map<std::string, int64_t> consts;
  std::map<std::string, const ast::FnDecl*> fns;
  std::map<std::string, Tensor> states;  // empty until the first call
  int call_depth = 0;

  // ---------------------------------------------------------------- compile-time integers

  const Binding* find_local(const Frame& f, const std::string& n) const {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto b = it->find(n);
      if (b != it->end()) return &b->second;
    }
    return nullptr;
  }

  // The value of a compile-time integer expression, or nullopt if it is not one (it reads a
  // local, a state, or anything not an integer).
  std::optional<int64_t> static_int(const ast::Expr& e, const Frame* f) const {
    switch (e.kind) {
      case ast::ExprKind::IntLit:
        return e.int_value;
      case ast::ExprKind::Name: {
        if (f && find_local(*f, e.text)) return std::nullopt;
        if (states.count(e.text)) return std::nullopt;
        auto c = consts.find(e.text);
        if (c != consts.end()) return c->second;
        if (f) {
          auto d = f->dims.find(e.text);
          if (d != f->dims.end()) return d->second;
        }
        return std::nullopt;
      }
      case ast::ExprKind::Unary: {
        if (e.unary_op != ast::UnaryOp::Neg) return std::nullopt;
        auto v = static_int(*e.args[0], f);
        if (!v) return std::nullopt;
        return -*v;
      }
      case ast::ExprKind::Binary: {
        auto a = static_int(*e.args[0], f);
        auto b = static_int(*e.args[1], f);
        if (!a || !b) return std::nullopt;
        switch (e.binary_op) {
          case ast::BinaryOp::Add: return *a + *b;
          case ast::BinaryOp::Sub: return *a - *b;
          case ast::BinaryOp::Mul: return *a * *b;
          case ast::BinaryOp::Div:
            if (*b == 0) unsupported(e.span, "division by zero in a compile-time integer");
            return *a / *b;
          case ast::BinaryOp::Mod:
            if (*b == 0) unsupported(e.span, "modulo by zero in a compile-time integer");
            return *a % *b;
          default:
            return std::nullopt;
        }
      }
      default:
        return std::nullopt;
    }
  }

  int64_t require_static(const ast::Expr& e, const Frame* f, const char* what) const {
    auto v = static_int(e, f);
    if (!v) unsupported(e.span, std::string(what) + " must be a compile-time integer");
    return *v;
  }

  Shape static_shape(const ast::Expr& e, const Frame* f) const {
    Shape s;
    if (e.kind == ast::ExprKind::Tuple) {
      for (const auto& a : e.args) s.push_back(require_static(*a, f, "a shape dim"));
    } else {
      s.push_back(require_static(e, f, "a shape dim"));
    }
    return s;
  }

  Shape type_shape(const ast::TypeExpr& t, const Frame* f) const {
    Shape s;
    for (const auto& d : t.dims) s.push_back(require_static(*d, f, "a dim"));
    return s;
  }

  static DType type_dtype(const ast::TypeExpr& t) {
    if (t.dtype == "int") return DType::I32;
    auto d = parse_dtype(t.dtype);
    if (!d) unsupported(t.dtype_span, "unknown dtype " + t.dtype);
    return *d;
  }

  // Binds the symbolic dims of `t` (plain names that are not consts) from `shape`.
  void bind_dims(const ast::TypeExpr& t, const Shape& shape, std::map<std::string, int64_t>& dims) const {
    if (t.dtype == "int") return;
    if (t.dims.size() != shape.size())
      unsupported(t.span, "argument of rank " + std::to_string(shape.size()) + " for a parameter of rank " +
                              std::to_string(t.dims.size()));
    for (size_t i = 0; i < t.dims.size(); ++i) {
      const ast::Expr& d = *t.dims[i];
      if (d.kind == ast::ExprKind::Name && !consts.count(d.text) && !dims.count(d.text))
        dims[d.text] = shape[i];
    }
  }

  // ---------------------------------------------------------------- setup

  void init_consts(const std::map<std::string, int64_t>& defines) {
    for (const auto& c : prog.consts) {
      auto d = defines.find(c.name);
      if (d != defines.end()) {
        consts[c.name] = d->second;
      } else {
        consts[c.name] = require_static(*c.value, nullptr, "a const");
      }
    }
    for (const auto& fn : prog.fns) fns[fn.name] = &fn;
  }

  void init_states(const Frame& entry_frame) {
    for (const auto& sd : prog.states) {
      DType d = type_dtype(sd.type);
      Tensor t(d, type_shape(sd.type, &entry_frame));
      double v = 0;
      int64_t iv = 0;
      if (sd.init == ast::StateDecl::Init::Ones) {
        v = 1;
        iv = 1;
      } else if (sd.init == ast::StateDecl::Init::Full) {
        Frame empty;
        Value fv = eval(*sd.fill_value, empty);
        v = fv.t.get(0);
        iv = fv.t.get_int(0);
      }
      for (int64_t i = 0; i < t.numel(); ++i) {
        if (is_float(d)) t.set(i, v); else t.set_int(i, iv);
      }
      states[sd.name] = t;
    }
  }

  // ---------------------------------------------------------------- functions

  std::vector<Value> call_fn(const ast::FnDecl& fn, std::vector<Value> args, Frame* bound_frame = nullptr) {
    if (args.size() != fn.params.size())
      unsupported(fn.span, fn.name + " called with " + std::to_string(args.size()) + " arguments");
    if (++call_depth > 64) unsupported(fn.span, "call depth over 64 (recursion?)");
    Frame f;
    f.scopes.emplace_back();
    for (size_t i = 0; i < args.size(); ++i) {
      const ast::Param& p = fn.params[i];
      Value a = coerce(args[i], type_dtype(p.type));
      bind_dims(p.type, a.t.shape(), f.dims);
      a.literal = a.literal && p.type.dtype == "int";
      f.scopes.back()[p.name] = Binding{a, false};
    }
    if (bound_frame) bound_frame->dims = f.dims;
    Flow flow = exec_block(*fn.body, f);
    --call_depth;
    if (flow != Flow::Return) unsupported(fn.span, fn.name + " ended without return");
    if (f.ret.size() != fn.results.size())
      unsupported(fn.span, fn.name + " returned " + std::to_string(f.ret.size()) + " values for " +
                               std::to_string(fn.results.size()) + " results");
    for (size_t i = 0; i < f.ret.size(); ++i) {
      f.ret[i] = coerce(f.ret[i], type_dtype(fn.results[i]));
      f.ret[i].literal = false;
    }
    return f.ret;
  }

  // ---------------------------------------------------------------- statements

  Flow exec_block(const ast::Block& b, Frame& f) {
    f.scopes.emplace_back();
    Flow flow = Flow::Normal;
    for (const auto& s : b.stmts) {
      flow = exec_stmt(*s, f);
      if (flow != Flow::Normal) break;
    }
    f.scopes.pop_back();
    return flow;
  }

  Binding* find_local_mut(Frame& f, const std::string& n) {
    for (auto it = f.scopes.rbegin(); it != f.scopes.rend(); ++it) {
      auto b = it->find(n);
      if (b != it->end()) return &b->second;
    }
    return nullptr;
  }

  // The current value of an assignable name and a way to store a new one.
  Tensor read_target(Frame& f, const std::string& n, const Span& s) {
    if (Binding* b = find_local_mut(f, n)) {
      if (!b->is_mutable) unsupported(s, "assignment to immutable " + n);
      return b->v.t;
    }
    auto st = states.find(n);
    if (st != states.end()) return st->second;
    unsupported(s, "assignment to unknown name " + n);
  }

  void write_target(Frame& f, const std::string& n, const Tensor& t) {
    if (Binding* b = find_local_mut(f, n)) {
      b->v = Value{t, false};
      return;
    }
    states[n] = t;
  }

  Flow exec_stmt(const ast::Stmt& s, Frame& f) {
    switch (s.kind) {
      case ast::StmtKind::Let: {
        std::vector<Value> vals;
        if (s.names.size() == 1) vals.push_back(eval(*s.value, f));
        else vals = eval_multi(*s.value, f);
        if (vals.size() != s.names.size()) unsupported(s.span, "tuple unpack of the wrong size");
        for (size_t i = 0; i < vals.size(); ++i) f.scopes.back()[s.names[i]] = Binding{Value{vals[i].t, false}, false};
        return Flow::Normal;
      }
      case ast::StmtKind::Var: {
        Value v = eval(*s.value, f);
        if (s.type) v = coerce(v, type_dtype(*s.type));
        f.scopes.back()[s.names[0]] = Binding{Value{v.t, false}, true};
        return Flow::Normal;
      }
      case ast::StmtKind::Assign:
        assign(s, f);
        return Flow::Normal;
      case ast::StmtKind::ExprStmt:
        eval_multi(*s.value, f);
        return Flow::Normal;
      case ast::StmtKind::If: {
        if (truthy(eval(*s.cond, f), s.cond->span)) return exec_block(*s.then_block, f);
        if (s.else_block) return exec_block(*s.else_block, f);
        return Flow::Normal;
      }
      case ast::StmtKind::For: {
        Value a = eval(*s.range_start, f);
        Value b = eval(*s.range_end, f);
        int64_t lo = a.t.get_int(0), hi = b.t.get_int(0);
        for (int64_t i = lo; i < hi; ++i) {
          f.scopes.emplace_back();
          f.scopes.back()[s.names[0]] = Binding{Value{Tensor::scalar_i32(static_cast<int32_t>(i)), false}, false};
          Flow flow = exec_block(*s.body, f);
          f.scopes.pop_back();
          if (flow == Flow::Break) break;
          if (flow == Flow::Return) return flow;
        }
        return Flow::Normal;
      }
      case ast::StmtKind::While: {
        std::optional<int64_t> max_trips;
        if (s.max_trips) max_trips = require_static(*s.max_trips, &f, "a while max bound");
        int64_t trips = 0;
        while (true) {
          if (max_trips && trips >= *max_trips) break;
          if (!truthy(eval(*s.cond, f), s.cond->span)) break;
          ++trips;
          if (!max_trips && trips > 1000000) unsupported(s.span, "unbounded while ran a million trips");
          Flow flow = exec_block(*s.body, f);
          if (flow == Flow::Break) break;
          if (flow == Flow::Return) return flow;
        }
        return Flow::Normal;
      }
      case ast::StmtKind::Break:
        return Flow::Break;
      case ast::StmtKind::Continue:
        return Flow::Continue;
      case ast::StmtKind::Return:
        f.ret = eval_multi(*s.value, f);
        return Flow::Return;
      case ast::StmtKind::BlockStmt:
        return exec_block(*s.body, f);
    }
    return Flow::Normal;
  }

  void assign(const ast::Stmt& s, Frame& f) {
    const ast::Expr& tgt = *s.target;
    if (tgt.kind == ast::ExprKind::Name) {
      Tensor old = read_target(f, tgt.text, tgt.span);
      Value v = coerce(eval(*s.value, f), old.dtype());
      write_target(f, tgt.text, v.t);
      return;
    }
    if (tgt.kind != ast::ExprKind::Index || tgt.args[0]->kind != ast::ExprKind::Name)
      unsupported(tgt.span, "assignment target must be a name or a slice of a name");
    const std::string& n = tgt.args[0]->text;
    Tensor old = read_target(f, n, tgt.span);
    std::vector<cpu::SliceSpec> specs = slice_specs(old.shape(), tgt.items, f, tgt.span);
    Value v = coerce(eval(*s.value, f), old.dtype());
    Tensor val = v.t;
    if (val.dtype() != old.dtype()) unsupported(s.span, "slice write of a different dtype");
    cpu::KernelAttrs attrs;
    attrs.slices = specs;
    // The kernel broadcasts the value to the slice and returns a fresh tensor (copy-on-write:
    // the old tensor may be shared with other bindings).
    Tensor updated = run1(ir::Op::SliceUpdate, {old, val}, attrs);
    write_target(f, n, updated);
  }

  // ---------------------------------------------------------------- indexing

  std::vector<cpu::SliceSpec> slice_specs(const Shape& shape, const std::vector<ast::IndexItem>& items, Frame& f,
                                          const Span& span) {
    size_t rank = shape.size();
    size_t explicit_axes = 0;
    int ellipses = 0;
    for (const auto& it : items) {
      if (it.kind == ast::IndexItem::Kind::Ellipsis) ++ellipses;
      else ++explicit_axes;
    }
    if (ellipses > 1 || explicit_axes > rank) unsupported(span, "too many indices");
    std::vector<cpu::SliceSpec> specs;
    auto full = [&](size_t axis) { specs.push_back(cpu::SliceSpec{0, shape[axis], 1, false}); };
    for (const auto& it : items) {
      if (it.kind == ast::IndexItem::Kind::Ellipsis) {
        for (size_t k = 0; k < rank - explicit_axes; ++k) full(specs.size());
        continue;
      }
      int64_t dim = shape[specs.size()];
      if (it.kind == ast::IndexItem::Kind::Index) {
        if (auto sv = static_int(*it.index, &f)) {
          int64_t i = *sv < 0 ? *sv + dim : *sv;
          if (i < 0 || i >= dim) unsupported(it.span, "static index out of range");
          specs.push_back(cpu::SliceSpec{i, 1, 1, true});
        } else {
          Value iv = eval(*it.index, f);
          if (iv.t.numel() != 1 || !is_int(iv.t.dtype())) unsupported(it.span, "index must be an integer scalar");
          specs.push_back(cpu::SliceSpec{cpu::resolve_dynamic_start(iv.t.get_int(0), dim, 1), 1, 1, true});
        }
        continue;
      }
      // A slice: static bounds (Python semantics), or a dynamic start with `stop = start + K`.
      int64_t step = it.step ? require_static(*it.step, &f, "a slice step") : 1;
      if (step <= 0) unsupported(it.span, "slice step must be positive");
      std::optional<int64_t> st = it.start ? static_int(*it.start, &f) : std::optional<int64_t>(0);
      std::optional<int64_t> sp = it.stop ? static_int(*it.stop, &f) : std::optional<int64_t>(dim);
      if (st && sp) {
        int64_t a = *st < 0 ? std::max<int64_t>(*st + dim, 0) : std::min(*st, dim);
        int64_t b = *sp < 0 ? std::max<int64_t>(*sp + dim, 0) : std::min(*sp, dim);
        int64_t size = b > a ? (b - a + step - 1) / step : 0;
        specs.push_back(cpu::SliceSpec{a, size, step, false});
        continue;
      }
      // Dynamic start: the size must be static, i.e. stop is written `start + K`.
      if (!st && it.stop && it.stop->kind == ast::ExprKind::Binary && it.stop->binary_op == ast::BinaryOp::Add &&
          step == 1) {
        auto k = static_int(*it.stop->args[1], &f);
        if (k && *k >= 0) {
          Value sv = eval(*it.start, f);
          specs.push_back(cpu::SliceSpec{cpu::resolve_dynamic_start(sv.t.get_int(0), dim, *k), *k, 1, false});
          continue;
        }
      }
      unsupported(it.span, "dynamic slice without a static size");
    }
    while (specs.size() < rank) full(specs.size());
    return specs;
  }

  // ---------------------------------------------------------------- expressions

  std::vector<Value> eval_multi(const ast::Expr& e, Frame& f) {
    if (e.kind == ast::ExprKind::Tuple) {
      std::vector<Value> out;
      for (const auto& a : e.args) out.push_back(eval(*a, f));
      return out;
    }
    if (e.kind == ast::ExprKind::Call) {
      auto it = fns.find(e.text);
      if (it != fns.end()) return call_fn(*it->second, eval_args(e, f));
    }
    return {eval(e, f)};
  }

  std::vector<Value> eval_args(const ast::Expr& e, Frame& f) {
    std::vector<Value> out;
    for (const auto& a : e.args) out.push_back(eval(*a, f));
    return out;
  }

  Value eval(const ast::Expr& e, Frame& f) {
    switch (e.kind) {
      case ast::ExprKind::IntLit:
        return Value{Tensor::scalar_i32(static_cast<int32_t>(e.int_value)), true};
      case ast::ExprKind::FloatLit:
        return Value{Tensor::scalar_f32(static_cast<float>(e.float_value)), true};
      case ast::ExprKind::BoolLit:
        return Value{Tensor::scalar_bool(e.bool_value), true};
      case ast::ExprKind::StringLit:
        unsupported(e.span, "a string is not a value");
      case ast::ExprKind::Name: {
        if (const Binding* b = find_local(f, e.text)) return b->v;
        auto st = states.find(e.text);
        if (st != states.end()) return Value{st->second, false};
        auto c = consts.find(e.text);
        if (c != consts.end()) return Value{Tensor::scalar_i32(static_cast<int32_t>(c->second)), true};
        auto d = f.dims.find(e.text);
        if (d != f.dims.end()) return Value{Tensor::scalar_i32(static_cast<int32_t>(d->second)), true};
        unsupported(e.span, "unknown name " + e.text);
      }
      case ast::ExprKind::Member:
        unsupported(e.span, "weights are not supported");
      case ast::ExprKind::Unary: {
        Value a = eval(*e.args[0], f);
        ir::Op op = e.unary_op == ast::UnaryOp::Neg ? ir::Op::Neg : ir::Op::Not;
        return Value{run1(op, {a.t}), a.literal};
      }
      case ast::ExprKind::Binary: {
        Value a = eval(*e.args[0], f);
        Value b = eval(*e.args[1], f);
        unify_literals(a, b);
        bool lit = a.literal && b.literal && is_arith(e.binary_op);
        return Value{run1(binary_ir_op(e.binary_op), {a.t, b.t}), lit};
      }
      case ast::ExprKind::Call:
        return eval_call(e, f);
      case ast::ExprKind::Index: {
        Value base = eval(*e.args[0], f);
        cpu::KernelAttrs attrs;
        attrs.slices = slice_specs(base.t.shape(), e.items, f, e.span);
        return Value{run1(ir::Op::Slice, {base.t}, attrs), false};
      }
      case ast::ExprKind::Tuple:
        unsupported(e.span, "a tuple is not a single value here");
    }
    unsupported(e.span, "unknown expression");
  }

  const ast::Expr* kwarg(const ast::Expr& e, const char* name) const {
    for (const auto& k : e.kwargs)
      if (k.name == name) return k.value.get();
    return nullptr;
  }

  DType dtype_arg(const ast::Expr& e) const {
    if (e.kind != ast::ExprKind::Name) unsupported(e.span, "expected a dtype");
    auto d = parse_dtype(e.text);
    if (!d) unsupported(e.span, "expected a dtype, got " + e.text);
    return *d;
  }

  bool bool_attr(const ast::Expr* e) const {
    if (!e) return false;
    if (e->kind != ast::ExprKind::BoolLit) unsupported(e->span, "expected true or false");
    return e->bool_value;
  }

  std::vector<int64_t> axes_attr(const ast::Expr& ax, size_t rank, Frame& f) const {
    std::vector<int64_t> axes;
    if (ax.kind == ast::ExprKind::Tuple) {
      for (const auto& a : ax.args) axes.push_back(norm_axis(require_static(*a, &f, "an axis"), rank, a->span));
    } else {
      axes.push_back(norm_axis(require_static(ax, &f, "an axis"), rank, ax.span));
    }
    std::sort(axes.begin(), axes.end());
    axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
    return axes;
  }

  void need_args(const ast::Expr& e, size_t lo, size_t hi) const {
    if (e.args.size() < lo || e.args.size() > hi)
      unsupported(e.span, e.text + ": wrong number of arguments");
  }

  Tensor filled(DType d, const Shape& shape, const Value& v) const {
    Tensor t(d, shape);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (is_float(d)) t.set(i, v.t.get(0)); else t.set_int(i, v.t.get_int(0));
    }
    return t;
  }

  Value eval_call(const ast::Expr& e, Frame& f) {
    const std::string& n = e.text;
    if (auto it = fns.find(n); it != fns.end()) {
      std::vector<Value> r = call_fn(*it->second, eval_args(e, f));
      if (r.size() != 1) unsupported(e.span, n + " returns a tuple; use `let a, b = ...`");
      return r[0];
    }
    if (auto op = unary_builtin(n)) {
      need_args(e, 1, 1);
      Value a = eval(*e.args[0], f);
      return Value{run1(*op, {a.t}), a.literal};
    }
    if (n == "gelu") {
      need_args(e, 1, 1);
      cpu::KernelAttrs attrs;
      if (const ast::Expr* ap = kwarg(e, "approximate")) attrs.approx_tanh = ap->text == "tanh";
      return Value{run1(ir::Op::Gelu, {eval(*e.args[0], f).t}, attrs), false};
    }
    if (n == "maximum" || n == "minimum" || n == "pow") {
      need_args(e, 2, 2);
      Value a = eval(*e.args[0], f), b = eval(*e.args[1], f);
      unify_literals(a, b);
      ir::Op op = n == "maximum" ? ir::Op::Maximum : n == "minimum" ? ir::Op::Minimum : ir::Op::Pow;
      return Value{run1(op, {a.t, b.t}), a.literal && b.literal};
    }
    if (n == "where") {
      need_args(e, 3, 3);
      Value c = eval(*e.args[0], f), a = eval(*e.args[1], f), b = eval(*e.args[2], f);
      unify_literals(a, b);
      return Value{run1(ir::Op::Where, {c.t, a.t, b.t}), false};
    }
    if (n == "cast") {
      need_args(e, 2, 2);
      return Value{cast_to(eval(*e.args[0], f).t, dtype_arg(*e.args[1])), false};
    }
    if (auto op = reduction_builtin(n)) {
      need_args(e, 1, 2);
      Tensor a = eval(*e.args[0], f).t;
      cpu::KernelAttrs attrs;
      const ast::Expr* ax = kwarg(e, "axis");
      if (!ax && e.args.size() == 2) ax = e.args[1].get();
      if (ax) {
        attrs.axes = axes_attr(*ax, a.rank(), f);
      } else {
        for (size_t i = 0; i < a.rank(); ++i) attrs.axes.push_back(static_cast<int64_t>(i));
      }
      attrs.keepdims = bool_attr(kwarg(e, "keepdims"));
      return Value{run1(*op, {a}, attrs), false};
    }
    if (n == "argmax" || n == "argmin") {
      need_args(e, 1, 2);
      Tensor a = eval(*e.args[0], f).t;
      const ast::Expr* ax = kwarg(e, "axis");
      if (!ax && e.args.size() == 2) ax = e.args[1].get();
      cpu::KernelAttrs attrs;
      if (ax) attrs.axis = norm_axis(require_static(*ax, &f, "an axis"), a.rank(), ax->span);
      else if (a.rank() != 1) unsupported(e.span, n + " without axis= on a tensor of rank != 1");
      attrs.keepdims = bool_attr(kwarg(e, "keepdims"));
      return Value{run1(n == "argmax" ? ir::Op::ArgMax : ir::Op::ArgMin, {a}, attrs), false};
    }
    if (n == "softmax" || n == "log_softmax" || n == "cumsum") {
      need_args(e, 1, 2);
      Tensor a = eval(*e.args[0], f).t;
      const ast::Expr* ax = kwarg(e, "axis");
      if (!ax && e.args.size() == 2) ax = e.args[1].get();
      cpu::KernelAttrs attrs;
      attrs.axis = norm_axis(ax ? require_static(*ax, &f, "an axis") : -1, a.rank(), e.span);
      ir::Op op = n == "softmax" ? ir::Op::Softmax : n == "log_softmax" ? ir::Op::LogSoftmax : ir::Op::CumSum;
      return Value{run1(op, {a}, attrs), false};
    }
    if (n == "zeros" || n == "ones") {
      need_args(e, 1, 2);
      DType d = e.args.size() == 2 ? dtype_arg(*e.args[1]) : DType::F32;
      Value v{Tensor::scalar_i32(n == "ones" ? 1 : 0), true};
      return Value{filled(d, static_shape(*e.args[0], &f), v), false};
    }
    if (n == "full") {
      need_args(e, 2, 3);
      Value v = eval(*e.args[1], f);
      DType d = e.args.size() == 3 ? dtype_arg(*e.args[2]) : v.t.dtype();
      return Value{filled(d, static_shape(*e.args[0], &f), v), false};
    }
    if (n == "zeros_like" || n == "ones_like") {
      need_args(e, 1, 1);
      Tensor a = eval(*e.args[0], f).t;
      return Value{filled(a.dtype(), a.shape(), Value{Tensor::scalar_i32(n == "ones_like" ? 1 : 0), true}), false};
    }
    if (n == "arange") {
      need_args(e, 1, 2);
      cpu::KernelAttrs attrs;
      attrs.dtype = e.args.size() == 2 ? dtype_arg(*e.args[1]) : DType::I32;
      attrs.shape = {require_static(*e.args[0], &f, "arange's length")};
      return Value{run1(ir::Op::Arange, {}, attrs), false};
    }
    if (n == "reshape") {
      need_args(e, 2, 2);
      Tensor a = eval(*e.args[0], f).t;
      Shape s = static_shape(*e.args[1], &f);
      int64_t known = 1, hole = -1;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == -1) hole = static_cast<int64_t>(i);
        else known *= s[i];
      }
      if (hole >= 0) s[static_cast<size_t>(hole)] = known ? a.numel() / known : 0;
      cpu::KernelAttrs attrs;
      attrs.shape = s;
      return Value{run1(ir::Op::Reshape, {a}, attrs), false};
    }
    if (n == "concat") {
      need_args(e, 1, 1);
      if (e.args[0]->kind != ast::ExprKind::Tuple) unsupported(e.span, "concat takes a tuple");
      std::vector<Tensor> parts;
      for (const auto& a : e.args[0]->args) parts.push_back(eval(*a, f).t);
      const ast::Expr* ax = kwarg(e, "axis");
      cpu::KernelAttrs attrs;
      attrs.axis = norm_axis(ax ? require_static(*ax, &f, "an axis") : 0, parts.at(0).rank(), e.span);
      return Value{run1(ir::Op::Concat, parts, attrs), false};
    }
    if (n == "transpose") {
      need_args(e, 3, 3);
      Tensor a = eval(*e.args[0], f).t;
      int64_t x = norm_axis(require_static(*e.args[1], &f, "an axis"), a.rank(), e.span);
      int64_t y = norm_axis(require_static(*e.args[2], &f, "an axis"), a.rank(), e.span);
      cpu::KernelAttrs attrs;
      for (size_t i = 0; i < a.rank(); ++i) attrs.axes.push_back(static_cast<int64_t>(i));
      std::swap(attrs.axes[static_cast<size_t>(x)], attrs.axes[static_cast<size_t>(y)]);
      return Value{run1(ir::Op::Permute, {a}, attrs), false};
    }
    unsupported(e.callee_span, "builtin " + n + " is not supported by the difftest interpreter");
  }

  // ---------------------------------------------------------------- entry

  std::vector<Tensor> call(const std::string& entry, const std::vector<std::pair<std::string, Tensor>>& inputs) {
    std::string name = entry.empty() ? "main" : entry;
    auto it = fns.find(name);
    if (it == fns.end()) throw InterpError("difftest interpreter: no function " + name);
    const ast::FnDecl& fn = *it->second;
    std::vector<Value> args;
    for (const auto& p : fn.params) {
      auto in = std::find_if(inputs.begin(), inputs.end(), [&](const auto& kv) { return kv.first == p.name; });
      if (in == inputs.end()) throw InterpError("difftest interpreter: missing input " + p.name);
      args.push_back(Value{in->second.clone(), false});
    }
    if (states.empty() && !prog.states.empty()) {
      Frame f;
      for (size_t i = 0; i < fn.params.size(); ++i) bind_dims(fn.params[i].type, args[i].t.shape(), f.dims);
      init_states(f);
    }
    call_depth = 0;
    std::vector<Value> r = call_fn(fn, args);
    std::vector<Tensor> out;
    for (auto& v : r) out.push_back(v.t);
    return out;
  }
};

ast::Program parse_or_throw(const std::string& source, const std::string& name) {
  SourceManager sm;
  int file = sm.add(name, source);
  Diagnostics diags;
  ast::Program p = parse_program(sm, file, diags);
  if (diags.has_errors()) throw InterpError("parse errors:\n" + diags.render(sm));
  return p;
}

Interpreter::Interpreter(ast::Program program, std::map<std::string, int64_t> defines)
    : impl_(std::make_unique<Impl>()) {
  impl_->prog = std::move(program);
  impl_->init_consts(defines);
}

Interpreter::~Interpreter() = default;

std::vector<Tensor> Interpreter::call(const std::string& entry,
                                      const std::vector<std::pair<std::string, Tensor>>& inputs) {
  return impl_->call(entry, inputs);
}

Tensor Interpreter::state(const std::string& name) const {
  auto it = impl_->states.find(name);
  return it == impl_->states.end() ? Tensor() : it->second;
}

std::vector<std::string> Interpreter::state_names() const {
  std::vector<std::string> out;
  for (const auto& s : impl_->prog.states) out.push_back(s.name);
  return out;
}

}  // namespace grape::difftest
