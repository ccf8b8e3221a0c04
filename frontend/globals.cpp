#include "frontend/globals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace grape::frontend {

bool Globals::is_weight_prefix(const std::string& path) const {
  if (weights.count(path) || groups.count(path)) return true;
  auto it = weights.lower_bound(path + ".");
  return it != weights.end() && it->first.compare(0, path.size() + 1, path + ".") == 0;
}

std::vector<std::string> Globals::all_names() const {
  std::vector<std::string> out;
  for (const auto& [n, v] : consts) out.push_back(n);
  for (const auto& n : state_order) out.push_back(n);
  for (const auto& [n, f] : fns) out.push_back(n);
  for (const auto& [n, c] : groups)
    if (n.find('.') == std::string::npos) out.push_back(n);
  for (const auto& [n, w] : weights) out.push_back(n.substr(0, n.find('.')));
  return out;
}

static bool checked_op(int64_t a, int64_t b, ast::BinaryOp op, int64_t& out) {
  switch (op) {
    case ast::BinaryOp::Add: return !__builtin_add_overflow(a, b, &out);
    case ast::BinaryOp::Sub: return !__builtin_sub_overflow(a, b, &out);
    case ast::BinaryOp::Mul: return !__builtin_mul_overflow(a, b, &out);
    case ast::BinaryOp::Div:
    case ast::BinaryOp::Mod: {
      if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1)) return false;
      int64_t q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) {  // floor semantics, like the runtime
        q -= 1;
        r += b;
      }
      out = op == ast::BinaryOp::Div ? q : r;
      return true;
    }
    default: return false;
  }
}

std::optional<int64_t> eval_const_int(const ast::Expr& e, const ConstLookup& lookup,
                                      const std::vector<std::string>& candidates, Diagnostics& diags) {
  using K = ast::ExprKind;
  switch (e.kind) {
    case K::IntLit: return e.int_value;
    case K::Name: {
      auto found = lookup(e.text);
      if (found) return *found;
      std::string msg = quote_name(e.text) + " is not a const; a compile-time integer is required here";
      std::string best = closest_name(e.text, candidates);
      if (!best.empty()) msg += " (did you mean " + quote_name(best) + "?)";
      diags.error(e.span, msg);
      return std::nullopt;
    }
    case K::Unary:
      if (e.unary_op == ast::UnaryOp::Neg) {
        auto v = eval_const_int(*e.args[0], lookup, candidates, diags);
        if (!v || *v == std::numeric_limits<int64_t>::min()) return std::nullopt;
        return -*v;
      }
      break;
    case K::Binary: {
      auto a = eval_const_int(*e.args[0], lookup, candidates, diags);
      auto b = eval_const_int(*e.args[1], lookup, candidates, diags);
      if (!a || !b) return std::nullopt;
      auto op = e.binary_op;
      if (op != ast::BinaryOp::Add && op != ast::BinaryOp::Sub && op != ast::BinaryOp::Mul &&
          op != ast::BinaryOp::Div && op != ast::BinaryOp::Mod)
        break;
      int64_t out;
      if (!checked_op(*a, *b, op, out)) {
        diags.error(e.span, *b == 0 && (op == ast::BinaryOp::Div || op == ast::BinaryOp::Mod)
                                ? "division by zero in a compile-time integer expression"
                                : "integer overflow in a compile-time integer expression");
        return std::nullopt;
      }
      return out;
    }
    default: break;
  }
  diags.error(e.span, "expected a compile-time integer expression (integers, consts and + - * / %)");
  return std::nullopt;
}

std::optional<int64_t> eval_const_int(const ast::Expr& e, const std::map<std::string, int64_t>& consts,
                                      Diagnostics& diags) {
  std::vector<std::string> names;
  for (const auto& [n, v] : consts) names.push_back(n);
  ConstLookup lookup = [&](const std::string& n) -> std::optional<std::optional<int64_t>> {
    auto it = consts.find(n);
    if (it == consts.end()) return std::nullopt;
    return std::optional<int64_t>(it->second);
  };
  return eval_const_int(e, lookup, names, diags);
}

std::optional<ir::Dim> combine_dims(ast::BinaryOp op, const ir::Dim& a, const ir::Dim& b, std::string* err) {
  try {
    switch (op) {
      case ast::BinaryOp::Add: return a + b;
      case ast::BinaryOp::Sub: return a - b;
      case ast::BinaryOp::Mul: return a * b;
      case ast::BinaryOp::Div: {
        auto q = ir::Dim::div(a, b);
        if (!q) *err = "dimension " + a.str() + " is not divisible by " + b.str();
        return q;
      }
      default: return std::nullopt;
    }
  } catch (const ir::DimOverflow& e) {
    *err = e.what();
    return std::nullopt;
  }
}

// A dim of a state's type: consts fold to numbers, other names become symbols bound per session.
static std::optional<ir::Dim> state_dim(const ast::Expr& e, const Globals& g, Diagnostics& diags) {
  using K = ast::ExprKind;
  if (e.kind == K::IntLit) return ir::Dim(e.int_value);
  if (e.kind == K::Name) {
    auto it = g.consts.find(e.text);
    return it != g.consts.end() ? ir::Dim(it->second) : ir::Dim::sym(e.text);
  }
  if (e.kind == K::Binary) {
    auto a = state_dim(*e.args[0], g, diags), b = state_dim(*e.args[1], g, diags);
    if (!a || !b) return std::nullopt;
    std::string err;
    auto r = combine_dims(e.binary_op, *a, *b, &err);
    if (r) return r;
    if (!err.empty()) {
      diags.error(e.span, err);
      return std::nullopt;
    }
  }
  diags.error(e.span, "expected a dimension (an integer, a const, a symbolic name, or + - * / of those)");
  return std::nullopt;
}

static std::optional<double> const_number(const ast::Expr& e, const Globals& g, Diagnostics& diags) {
  using K = ast::ExprKind;
  if (e.kind == K::FloatLit) return e.float_value;
  if (e.kind == K::BoolLit) return e.bool_value ? 1.0 : 0.0;
  if (e.kind == K::Unary && e.unary_op == ast::UnaryOp::Neg) {
    auto v = const_number(*e.args[0], g, diags);
    if (v) return -*v;
    return std::nullopt;
  }
  auto v = eval_const_int(e, g.consts, diags);
  if (v) return static_cast<double>(*v);
  return std::nullopt;
}

static std::string number_text(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e18)
    return std::to_string(static_cast<int64_t>(v));
  std::ostringstream os;
  os << v;
  return os.str();
}

// Why `v` is not a value of `dt` (a state's full(v) would silently change it), or nullopt.
static std::optional<std::string> fill_problem(DType dt, double v) {
  switch (dt) {
    case DType::I32:
    case DType::I64: {
      if (v != std::trunc(v) || !std::isfinite(v)) return "not an integer";
      double lo = dt == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
      double hi = dt == DType::I32 ? 2147483647.0 : 9223372036854775807.0;
      if (v < lo || v > hi || (dt == DType::I64 && v == hi))
        return std::string("out of the range of ") + dtype_name(dt) +
               (dt == DType::I32 ? " (-2147483648 to 2147483647)" : "");
      return std::nullopt;
    }
    case DType::Bool:
      if (v != 0 && v != 1) return "a bool state holds only 0 (false) or 1 (true)";
      return std::nullopt;
    case DType::F16:
      if (std::isfinite(v) && std::fabs(v) > 65504.0) return "out of the range of f16 (at most 65504)";
      return std::nullopt;
    default: return std::nullopt;
  }
}

namespace {

class GlobalsBuilder {
 public:
  GlobalsBuilder(const CompileOptions& opts, Diagnostics& diags, Globals& g) : opts_(opts), diags_(diags), g_(g) {}

  void run(const ast::Program& p) {
    // Consts may refer to consts declared later; cycles are errors naming the cycle.
    for (const auto& c : p.consts)
      if (claim(c.name, c.name_span, "const")) const_decls_[c.name] = &c;
    for (const auto& c : p.consts)
      if (const_decls_.count(c.name) && const_decls_.at(c.name) == &c) resolve_const(c.name);
    for (const auto& w : p.weights)
      for (const auto& e : w.entries) {
        root_span_ = e.span;
        weight_entry(e, "", w.prefix.value_or(""));
      }
    for (const auto& s : p.states) state(s);
    for (const auto& f : p.fns) {
      if (claim(f.name, f.name_span, "function")) g_.fns[f.name] = &f;
      params(f);
    }
  }

 private:
  const CompileOptions& opts_;
  Diagnostics& diags_;
  Globals& g_;
  std::map<std::string, std::pair<Span, std::string>> claimed_;
  std::map<std::string, const ast::ConstDecl*> const_decls_;
  std::vector<std::string> resolving_;
  int64_t num_weights_ = 0;  // weights and group instances, against opts_.limits.max_weights
  bool too_many_weights_ = false;
  Span root_span_;  // the top-level weight entry being expanded

  // Parameter names of a function are unique (they would shadow each other silently).
  void params(const ast::FnDecl& f) {
    std::map<std::string, Span> seen;
    for (const auto& p : f.params) {
      auto [it, fresh] = seen.emplace(p.name, p.name_span);
      if (fresh) continue;
      auto& d = diags_.error(p.name_span, "parameter " + quote_name(p.name) + " of " + quote_name(f.name) +
                                              " is declared twice");
      d.notes.push_back({it->second, "the first " + quote_name(p.name) + " is here"});
    }
  }

  // Counts one weight or group instance against the limit; false (reported once) past it.
  bool count_weight() {
    if (too_many_weights_) return false;
    if (++num_weights_ <= opts_.limits.max_weights) return true;
    too_many_weights_ = true;
    diags_.error(root_span_, "the weights declare more than " + std::to_string(opts_.limits.max_weights) +
                                 " tensors and group instances (the max_weights limit)");
    return false;
  }

  // Adds a declaration's n elements to the program's total; the declaration that takes it past
  // the limit is reported (once) and fails.
  bool count_program_elements(int64_t n, Span span, const std::string& what) {
    int64_t before = g_.declared_elements;
    g_.declared_elements =
        before > std::numeric_limits<int64_t>::max() - n ? std::numeric_limits<int64_t>::max() : before + n;
    if (g_.declared_elements <= opts_.limits.max_program_elements) return true;
    if (before <= opts_.limits.max_program_elements)
      diags_.error(span, what + " takes the weights and states to " + std::to_string(g_.declared_elements) +
                             " elements; a program may have at most " +
                             std::to_string(opts_.limits.max_program_elements) +
                             " in tensors of static shape (the max_program_elements limit)");
    return false;
  }

  // The number of elements of a static shape, or an error (overflow or above the limit).
  bool check_elements(const std::vector<ir::Dim>& shape, Span span, const std::string& what) {
    int64_t n = 1;
    bool overflow = false;
    for (const auto& d : shape) {
      if (!d.is_const()) return true;  // checked when the dims are bound
      if (__builtin_mul_overflow(n, d.const_value(), &n)) overflow = true;
    }
    if (!overflow && n <= opts_.limits.max_tensor_elements) return count_program_elements(n, span, what);
    std::string t = ir::Type{DType::F32, shape}.str();
    diags_.error(span, what + " has " + (overflow ? "more than 2^63" : std::to_string(n)) +
                           " elements (shape " + t.substr(t.find('[')) + "); a tensor may have at most " +
                           std::to_string(opts_.limits.max_tensor_elements) +
                           " (the max_tensor_elements limit)");
    return false;
  }

  std::optional<int64_t> resolve_const(const std::string& name) {
    auto done = g_.consts.find(name);
    if (done != g_.consts.end()) return done->second;
    if (g_.poisoned.count(name)) return std::nullopt;
    const ast::ConstDecl& c = *const_decls_.at(name);
    auto cycle = std::find(resolving_.begin(), resolving_.end(), name);
    if (cycle != resolving_.end()) {
      std::string chain;
      for (auto it = cycle; it != resolving_.end(); ++it) chain += cut_name(*it) + " -> ";
      diags_.error(c.name_span,
                   "const " + quote_name(name) + " depends on itself (" + chain + cut_name(name) + ")");
      for (auto it = cycle; it != resolving_.end(); ++it) g_.poisoned.insert(*it);
      return std::nullopt;
    }
    std::optional<int64_t> v;
    auto over = opts_.defines.find(name);
    if (over != opts_.defines.end()) {
      v = over->second;
    } else {
      resolving_.push_back(name);
      std::vector<std::string> names;
      for (const auto& [n, d] : const_decls_) names.push_back(n);
      ConstLookup lookup = [&](const std::string& n) -> std::optional<std::optional<int64_t>> {
        if (!const_decls_.count(n)) return std::nullopt;
        return resolve_const(n);
      };
      v = eval_const_int(*c.value, lookup, names, diags_);
      resolving_.pop_back();
    }
    if (v) g_.consts[name] = *v;
    else g_.poisoned.insert(name);
    return v;
  }

  bool claim(const std::string& name, Span span, const std::string& kind) {
    auto [it, fresh] = claimed_.emplace(name, std::make_pair(span, kind));
    if (!fresh) {
      auto& d = diags_.error(span, quote_name(name) + " is already declared as a " + it->second.second);
      d.notes.push_back({it->second.first, "previous declaration is here"});
    }
    return fresh;
  }

  // A declaration that failed (reported): its uses are errors without a second report.
  void poison(const std::string& name) { g_.poisoned.insert(name); }

  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (size_t i = 0; i < parts.size(); ++i) s += (i ? "." : "") + parts[i];
    return s;
  }

  void weight_entry(const ast::WeightEntry& e, const std::string& path, const std::string& prefix) {
    std::string name = path + join(e.name_parts);
    if (path.empty()) {
      auto it = claimed_.find(e.name_parts[0]);
      bool shared_root = it != claimed_.end() && it->second.second == "weight";  // fc1.weight, fc1.bias
      if (!shared_root && !claim(e.name_parts[0], e.name_span, "weight")) return;
    }
    // A weight that failed: uses of its root name are errors without a second report.
    auto fail = [&] { poison(name.substr(0, name.find('.'))); };
    if (e.is_group()) {
      auto n = eval_const_int(*e.count, g_.consts, diags_);
      if (!n) return fail();
      if (*n < 0 || *n > 100000) {
        diags_.error(e.count->span, "weight group size must be between 0 and 100000, got " + std::to_string(*n));
        return fail();
      }
      g_.groups[name] = *n;
      for (int64_t i = 0; i < *n; ++i) {
        if (!count_weight()) return fail();
        for (const auto& c : e.children) weight_entry(c, name + "." + std::to_string(i) + ".", prefix);
      }
      return;
    }
    if (!count_weight()) return fail();
    if (g_.weights.count(name)) {
      diags_.error(e.name_span, "weight " + quote_name(name) + " is declared twice");
      return;
    }
    const ast::TypeExpr& t = *e.type;
    auto dt = parse_dtype(t.dtype);
    if (!dt) {
      diags_.error(t.dtype_span, "unknown element type " + quote_name(t.dtype) +
                                     " (expected f32, f16, bf16, i32, i64 or bool)");
      return fail();
    }
    ir::Type type{*dt, {}};
    for (const auto& d : t.dims) {
      auto v = eval_const_int(*d, g_.consts, diags_);
      if (!v) return fail();
      if (*v < 0) {
        diags_.error(d->span, "weight dimension must not be negative, got " + std::to_string(*v));
        return fail();
      }
      type.shape.push_back(ir::Dim(*v));
    }
    if (!check_elements(type.shape, e.span, "weight " + quote_name(prefix + name))) return fail();
    g_.weights[name] = WeightDecl{prefix + name, type, e.span};
    g_.weight_order.push_back(name);
  }

  void state(const ast::StateDecl& s) {
    if (!claim(s.name, s.name_span, "state")) return;
    auto dt = parse_dtype(s.type.dtype);
    if (!dt) {
      diags_.error(s.type.dtype_span, "unknown element type " + quote_name(s.type.dtype));
      return poison(s.name);
    }
    ir::StateInfo info;
    info.name = s.name;
    info.type.dtype = *dt;
    info.loc = s.span;
    for (const auto& d : s.type.dims) {
      auto dim = state_dim(*d, g_, diags_);
      if (!dim) return poison(s.name);
      if (dim->is_const() && dim->const_value() < 0) {
        // As for weights: a negative size is the program's error, not an element count to add up.
        diags_.error(d->span,
                     "state dimension must not be negative, got " + std::to_string(dim->const_value()));
        return poison(s.name);
      }
      info.type.shape.push_back(*dim);
    }
    if (!check_elements(info.type.shape, s.span, "state " + quote_name(s.name))) return poison(s.name);
    info.init = s.init == ast::StateDecl::Init::Zeros  ? ir::StateInfo::Init::Zeros
                : s.init == ast::StateDecl::Init::Ones ? ir::StateInfo::Init::Ones
                                                       : ir::StateInfo::Init::Full;
    if (s.init == ast::StateDecl::Init::Full) {
      auto v = const_number(*s.fill_value, g_, diags_);
      if (!v) return poison(s.name);
      if (auto why = fill_problem(*dt, *v)) {
        diags_.error(s.fill_value->span, "state " + quote_name(s.name) + " (" + std::string(dtype_name(*dt)) +
                                             ") cannot be filled with " + number_text(*v) + ": " + *why);
        return poison(s.name);
      }
      info.fill = *v;
    }
    g_.states[s.name] = &s;
    g_.state_order.push_back(s.name);
    g_.state_info[s.name] = info;
  }
};

}  // namespace

bool build_globals(const ast::Program& p, const CompileOptions& opts, Diagnostics& diags, Globals& g) {
  int before = diags.num_errors();
  GlobalsBuilder(opts, diags, g).run(p);
  return diags.num_errors() == before;
}

}  // namespace grape::frontend
