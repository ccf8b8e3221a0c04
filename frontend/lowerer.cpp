// Statements and control flow: the predication rewriter. See language.md, "Semantics of control
// flow": ops inside `if` branches run under the branch predicate; assignments under a predicate
// become selects; `break`/`continue` set flags that predicate the rest of the loop body; `for`
// loops whose index must be a compile-time integer are unrolled; other loops become device loops.
#include "frontend/lowerer.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "ir/passes/rewrite.h"

namespace grape::frontend {

using ir::kNoValue;
using ir::ValueId;

// ---------------------------------------------------------------------------------------------
// Emission helpers

void Lowerer::count_op(Span loc) {
  if (++budget_->ops <= opts_.limits.max_ops) return;
  budget_->exhausted = true;
  error(loc,
        "the program is too large: with every call inlined and every static loop unrolled it needs more "
        "than " +
            std::to_string(opts_.limits.max_ops) + " operations (the max_ops limit)");
  throw AbortEntry{};
}

void Lowerer::check_elements(const ir::Type& t, Span loc, bool count) {
  if (!elements_ok(t, loc)) throw AbortEntry{};
  if (!count) return;
  int64_t n = 1;
  for (const auto& d : t.shape) {
    if (!d.is_const()) return;  // only static shapes are counted
    n *= d.const_value();       // no overflow: elements_ok bounded the product
  }
  int64_t before = budget_->elements, limit = opts_.limits.max_program_elements;
  budget_->elements =
      before > std::numeric_limits<int64_t>::max() - n ? std::numeric_limits<int64_t>::max() : before + n;
  // Declarations past the limit were reported with the declarations.
  if (budget_->elements <= limit || before > limit) return;
  budget_->exhausted = true;
  error(loc, "this makes a tensor of type " + t.str() + ", taking the program to " +
                 std::to_string(budget_->elements) +
                 " elements in tensors of static shape (weights, states and every result, calls inlined "
                 "and loops unrolled); a program may have at most " +
                 std::to_string(limit) + " (the max_program_elements limit)");
  throw AbortEntry{};
}

bool Lowerer::elements_ok(const ir::Type& t, Span loc, const char* what) {
  int64_t n = 1;
  bool overflow = false;
  for (const auto& d : t.shape) {
    if (!d.is_const()) return true;  // checked when the dims are bound
    if (__builtin_mul_overflow(n, d.const_value(), &n)) overflow = true;
  }
  if (!overflow && n <= opts_.limits.max_tensor_elements) return true;
  error(loc, std::string(what) + " " + t.str() + ", with " +
                 (overflow ? "more than 2^63" : std::to_string(n)) + " elements; a tensor may have at most " +
                 std::to_string(opts_.limits.max_tensor_elements) + " (the max_tensor_elements limit)");
  return false;
}

ValueId Lowerer::emit(ir::Op op, std::vector<ValueId> operands, ir::Type type, ir::Attrs attrs, Span loc,
                      bool predicated) {
  count_op(loc);
  check_elements(type, loc, op != ir::Op::Weight && op != ir::Op::StateRead);
  ir::Operation o;
  o.op = op;
  o.operands = std::move(operands);
  o.attrs = std::move(attrs);
  o.loc = loc;
  o.pred = predicated ? pred_ : kNoValue;
  ValueId r = fn_->new_value(std::move(type));
  o.results.push_back(r);
  cur_->ops.push_back(std::move(o));
  return r;
}

std::vector<ValueId> Lowerer::emit_multi(ir::Op op, std::vector<ValueId> operands,
                                         std::vector<ir::Type> types, ir::Attrs attrs, Span loc) {
  count_op(loc);
  for (const auto& t : types) check_elements(t, loc);
  ir::Operation o;
  o.op = op;
  o.operands = std::move(operands);
  o.attrs = std::move(attrs);
  o.loc = loc;
  o.pred = pred_;
  for (auto& t : types) o.results.push_back(fn_->new_value(std::move(t)));
  auto results = o.results;
  cur_->ops.push_back(std::move(o));
  return results;
}

ValueId Lowerer::constant(DType dtype, double value, Span loc) {
  ir::Attrs a;
  a.dtype = dtype;
  if (is_float(dtype))
    a.fvalue = value;
  else
    a.ivalue = static_cast<int64_t>(value);
  return emit(ir::Op::Constant, {}, ir::Type{dtype, {}}, a, loc, false);
}

ValueId Lowerer::pred_and(ValueId p, ValueId c, Span loc) {
  if (p == kNoValue) return c;
  // select, not `and`: when p is false, c may be undefined (it was computed under p).
  return emit(ir::Op::Select, {p, c, constant(DType::Bool, 0, loc)}, ir::Type{DType::Bool, {}}, {}, loc,
              false);
}

ValueId Lowerer::pred_and_not(ValueId p, ValueId c, Span loc) {
  ValueId saved = pred_;
  pred_ = p;
  ValueId not_c = emit(ir::Op::Not, {c}, ir::Type{DType::Bool, {}}, {}, loc, true);
  pred_ = saved;
  return pred_and(p, not_c, loc);
}

ValueId Lowerer::current_stmt_pred(ValueId block_pred, std::pair<ValueId, ValueId> flags_at_start, Span loc) {
  if (ctx_.back().loops.empty()) return block_pred;
  const LoopFrame& f = ctx_.back().loops.back();
  if (std::make_pair(f.broken, f.skipped) == flags_at_start) return block_pred;
  ValueId flag = f.broken;
  if (f.skipped != kNoValue)
    flag = flag == kNoValue
               ? f.skipped
               : emit(ir::Op::Or, {f.broken, f.skipped}, ir::Type{DType::Bool, {}}, {}, loc, false);
  if (flag == kNoValue) return block_pred;
  return pred_and_not(block_pred, flag, loc);
}

// ---------------------------------------------------------------------------------------------
// Scopes and slots

void Lowerer::bind(const std::string& name, Span span, Val v, bool is_mutable) {
  Slot s;
  s.name = name;
  s.val = std::move(v);
  s.is_mutable = is_mutable;
  s.decl_pred = pred_;
  s.decl = span;
  slots_.push_back(std::move(s));
  ctx_.back().scopes.back()[name] = slots_.size() - 1;
}

std::optional<size_t> Lowerer::lookup_slot(const std::string& name) const {
  const auto& scopes = ctx_.back().scopes;
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto f = it->find(name);
    if (f != it->end()) return f->second;
  }
  auto s = state_slots_.find(name);
  if (s != state_slots_.end()) return s->second;
  return std::nullopt;
}

std::vector<size_t> Lowerer::carried_candidates() const {
  std::vector<size_t> out;
  for (const auto& scope : ctx_.back().scopes)
    for (const auto& [name, slot] : scope)
      if (slots_[slot].is_mutable && slots_[slot].val.is_tensor()) out.push_back(slot);
  for (const auto& [name, slot] : state_slots_)
    if (slots_[slot].val.is_tensor()) out.push_back(slot);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

void Lowerer::assign_slot(size_t slot, Val v, Span span) {
  Slot& s = slots_[slot];
  if (v.is_tensor() && s.val.is_tensor() && pred_ != kNoValue && pred_ != s.decl_pred) {
    ValueId old = s.val.v;
    v = Val::tensor(emit(ir::Op::Select, {pred_, v.v, old}, type_of(old), {}, span, false));
  }
  slots_[slot].val = v;
}

Val Lowerer::materialize_for_var(const Val& v, Span span) {
  if (v.is_tensor() || v.is_error()) return v;
  if (v.kind == Val::Kind::Tuple) {
    error(span, "a var holds one tensor; unpack a tuple with `let a, b = ...`");
    return Val::error();
  }
  auto t = to_tensor(v, std::nullopt, span);
  return t ? Val::tensor(*t) : Val::error();
}

// ---------------------------------------------------------------------------------------------
// Functions

bool Lowerer::lower_entry(const ast::FnDecl& fn, ir::Function& out) {
  fn_ = &out;
  out.name = fn.name;
  out.loc = fn.span;
  cur_ = &out.body;
  pred_ = kNoValue;
  hoist_pos_ = 0;
  ctx_.clear();
  slots_.clear();
  state_slots_.clear();
  weight_values_.clear();
  had_error_ = false;
  ctx_.push_back(FnContext{&fn, {{}}, {}, {}});

  std::map<std::string, ir::Dim> symbols;
  std::set<std::string> alone;  // symbols that appear as a whole dim somewhere (so inputs bind them)
  for (const auto& p : fn.params) {
    auto t = resolve_type(p.type, &symbols);
    if (!t || !elements_ok(*t, p.type.span, "a parameter of type")) continue;
    for (const auto& d : p.type.dims)
      if (d->kind == ast::ExprKind::Name && !g_.consts.count(d->text)) alone.insert(d->text);
    ir::Param param{p.name, *t, out.new_value(*t, p.name), p.name_span};
    out.params.push_back(param);
    // A duplicate name is reported with the declarations; the first parameter keeps the name.
    if (!ctx_.back().scopes.back().count(p.name)) bind(p.name, p.name_span, Val::tensor(param.value), false);
  }
  for (const auto& [name, dim] : symbols) {
    if (!alone.count(name)) {
      error(fn.name_span, "symbolic dimension " + quote_name(name) + " of " + quote_name(fn.name) +
                              " only appears inside expressions; some parameter must have it as a whole "
                              "dimension so that the inputs bind it");
      continue;
    }
    out.symbols.push_back(name);
  }
  for (const auto& r : fn.results) {
    auto t = resolve_type(r, nullptr);
    if (t && elements_ok(*t, r.span, "a result of type")) out.result_types.push_back(*t);
  }
  if (had_error_) return false;

  // States whose symbolic dims this entry binds are read at entry and written back at the end.
  std::map<std::string, ValueId> initial;
  for (const auto& name : g_.state_order) {
    const ir::StateInfo& info = g_.state_info.at(name);
    std::set<std::string> syms;
    for (const auto& d : info.type.shape) d.collect_symbols(syms);
    bool bound =
        std::all_of(syms.begin(), syms.end(), [&](const std::string& s) { return symbols.count(s) > 0; });
    if (!bound) continue;
    ir::Attrs a;
    a.name = name;
    ValueId v = emit(ir::Op::StateRead, {}, info.type, a, info.loc, false);
    ++hoist_pos_;
    initial[name] = v;
    Slot s;
    s.name = name;
    s.val = Val::tensor(v);
    s.is_mutable = true;
    s.is_state = true;
    s.decl = info.loc;
    slots_.push_back(s);
    state_slots_[name] = slots_.size() - 1;
  }

  in_body_ = true;
  try {
    Val ret = lower_fn_body(fn, kNoValue);
    std::vector<ValueId> results = check_results(fn, ret, out.result_types);
    if (results.size() == out.result_types.size()) out.body.yields = results;
  } catch (const AbortEntry&) {
  } catch (const ir::DimOverflow& e) {
    // Shape arithmetic past int64 (a reshape to (9223372036854775807, 3), say): the program's
    // error, at the expression being lowered.
    error(expr_span_, e.what());
  }
  in_body_ = false;
  for (const auto& [name, slot] : state_slots_) {
    const Val& v = slots_[slot].val;
    if (v.is_tensor() && v.v != initial[name]) {
      ir::Attrs a;
      a.name = name;
      ir::Operation o;
      o.op = ir::Op::StateWrite;
      o.operands = {v.v};
      o.attrs = a;
      o.loc = g_.state_info.at(name).loc;
      out.body.ops.push_back(std::move(o));
    }
  }
  return !had_error_;
}

std::vector<ValueId> Lowerer::check_results(const ast::FnDecl& fn, const Val& ret,
                                            const std::vector<ir::Type>& declared) {
  if (ret.is_error()) return {};
  std::vector<Val> vals;
  auto count = [](const Val& v) {
    return v.kind == Val::Kind::Tuple ? "a tuple of " + std::to_string(v.elems.size()) + " values"
                                      : std::string("a single value");
  };
  if (fn.tuple_result) {
    if (ret.kind != Val::Kind::Tuple || ret.elems.size() != declared.size()) {
      error(return_span_, quote_name(fn.name) + " declares " + std::to_string(declared.size()) +
                              " results but returns " + count(ret));
      return {};
    }
    vals = ret.elems;
  } else {
    if (ret.kind == Val::Kind::Tuple) {
      error(return_span_, quote_name(fn.name) + " declares one result but returns " + count(ret));
      return {};
    }
    vals = {ret};
  }
  std::vector<ValueId> out;
  for (size_t i = 0; i < vals.size() && i < declared.size(); ++i) {
    Span span = return_span_;
    auto t = to_tensor(vals[i], declared[i].dtype, span);
    if (!t) return {};
    if (type_of(*t) != declared[i]) {
      error(span, quote_name(fn.name) + " returns " + type_str(*t) +
                      (vals.size() > 1 ? " as result " + std::to_string(i + 1) : "") +
                      ", but its signature declares " + declared[i].str());
      return {};
    }
    out.push_back(*t);
  }
  return out;
}

Val Lowerer::lower_fn_body(const ast::FnDecl& fn, ValueId block_pred) {
  const auto& stmts = fn.body->stmts;
  Val ret = Val::error();
  bool returned = false;
  for (size_t i = 0; i < stmts.size(); ++i) {
    const ast::Stmt& s = *stmts[i];
    pred_ = block_pred;
    if (s.kind == ast::StmtKind::Return) {
      if (i + 1 != stmts.size()) {
        error(s.span, "return must be the last statement of a function");
        continue;
      }
      return_span_ = s.value->span;
      ret = lower_expr(*s.value);
      returned = true;
      continue;
    }
    lower_stmt(s);
  }
  if (!returned) {
    error(fn.name_span, "function " + quote_name(fn.name) + " must end with a return statement");
    throw AbortEntry{};
  }
  return ret;
}

// ---------------------------------------------------------------------------------------------
// Statements

void Lowerer::lower_block(const ast::Block& b, ValueId block_pred, bool new_scope) {
  ValueId saved_pred = pred_;
  if (new_scope) ctx_.back().scopes.emplace_back();
  std::pair<ValueId, ValueId> flags{kNoValue, kNoValue};
  if (!ctx_.back().loops.empty()) flags = {ctx_.back().loops.back().broken, ctx_.back().loops.back().skipped};
  for (const auto& s : b.stmts) {
    pred_ = current_stmt_pred(block_pred, flags, s->span);
    if (s->kind == ast::StmtKind::Return) {
      error(s->span, "return must be the last statement of a function, not inside a block");
      continue;
    }
    lower_stmt(*s);
  }
  if (new_scope) ctx_.back().scopes.pop_back();
  pred_ = saved_pred;
}

void Lowerer::lower_stmt(const ast::Stmt& s) {
  switch (s.kind) {
    case ast::StmtKind::Let: lower_let(s); break;
    case ast::StmtKind::Var: lower_var(s); break;
    case ast::StmtKind::Assign: lower_assign(s); break;
    case ast::StmtKind::ExprStmt: lower_expr(*s.value); break;
    case ast::StmtKind::If: lower_if(s); break;
    case ast::StmtKind::For: lower_for(s); break;
    case ast::StmtKind::While: lower_while(s); break;
    case ast::StmtKind::Break:
    case ast::StmtKind::Continue: lower_break_continue(s); break;
    case ast::StmtKind::Return: error(s.span, "return must be the last statement of a function"); break;
    case ast::StmtKind::BlockStmt: lower_block(*s.body, pred_); break;
  }
}

void Lowerer::lower_let(const ast::Stmt& s) {
  Val v = lower_expr(*s.value);
  if (s.names.size() == 1) {
    bind(s.names[0], s.name_spans[0], v, false);
    return;
  }
  if (!v.is_error() && (v.kind != Val::Kind::Tuple || v.elems.size() != s.names.size())) {
    error(s.value->span,
          "cannot unpack " +
              (v.kind == Val::Kind::Tuple ? "a tuple of " + std::to_string(v.elems.size()) + " values"
                                          : std::string("a single value")) +
              " into " + std::to_string(s.names.size()) + " names");
    v = Val::error();
  }
  for (size_t i = 0; i < s.names.size(); ++i)
    bind(s.names[i], s.name_spans[i], v.is_error() ? Val::error() : v.elems[i], false);
}

void Lowerer::lower_var(const ast::Stmt& s) {
  Val v = lower_expr(*s.value);
  if (s.type && !v.is_error()) {
    auto t = resolve_type(*s.type, nullptr);
    if (!t) {
      v = Val::error();
    } else if (v.is_static_number() && !t->shape.empty()) {
      // `var acc: f32[4] = 0` fills the declared shape.
      auto c = to_tensor(v, t->dtype, s.value->span);
      ir::Attrs a;
      a.shape = t->shape;
      v = c ? Val::tensor(emit(ir::Op::Expand, {*c}, *t, a, s.value->span)) : Val::error();
    } else {
      auto c = to_tensor(v, t->dtype, s.value->span);
      if (c && type_of(*c) != *t) {
        error(s.value->span, "var " + quote_name(s.names[0]) + " is declared " + t->str() +
                                 " but initialised with " + type_str(*c));
        v = Val::error();
      } else {
        v = c ? Val::tensor(*c) : Val::error();
      }
    }
  } else {
    v = materialize_for_var(v, s.value->span);
  }
  bind(s.names[0], s.name_spans[0], v, true);
}

void Lowerer::lower_assign(const ast::Stmt& s) {
  const ast::Expr* target = s.target.get();
  const ast::Expr* base = target->kind == ast::ExprKind::Index ? target->args[0].get() : target;
  if (base->kind != ast::ExprKind::Name) {
    error(target->span, "can only assign to a variable or to a slice of one (`x = ...`, `x[i] = ...`)");
    lower_expr(*s.value);
    return;
  }
  auto slot = lookup_slot(base->text);
  if (!slot) {
    Val what = lower_name(*base);  // reports unknown names with suggestions
    if (!what.is_error())
      error(base->span,
            "cannot assign to " + quote_name(base->text) + ": only vars and states can be assigned");
    lower_expr(*s.value);
    return;
  }
  if (!slots_[*slot].is_mutable) {
    error(base->span, "cannot assign to " + quote_name(base->text) +
                          ", which is a let binding or parameter; declare it with `var`");
    lower_expr(*s.value);
    return;
  }
  Val v = lower_expr(*s.value);
  const Val old = slots_[*slot].val;
  if (v.is_error() || !old.is_tensor()) return;
  const ir::Type old_type = type_of(old.v);
  if (target->kind == ast::ExprKind::Name) {
    auto t = to_tensor(v, old_type.dtype, s.value->span);
    if (!t) return;
    if (type_of(*t) != old_type) {
      error(s.value->span, "cannot assign a value of type " + type_str(*t) + " to " + quote_name(base->text) +
                               " of type " + old_type.str());
      return;
    }
    assign_slot(*slot, Val::tensor(*t, v.loop_index), s.span);
    return;
  }
  // x[...] = v: an in-place slice write, predicated like every other op.
  SliceSpec spec = resolve_slice(old_type, target->items, target->span);
  if (!spec.ok) return;
  auto t = to_tensor(v, old_type.dtype, s.value->span);
  if (!t) return;
  const ir::Type& vt = type_of(*t);
  if (vt.dtype != old_type.dtype) {
    error(s.value->span, "cannot write " + vt.str() + " into a slice of " + quote_name(base->text) +
                             " of type " + old_type.str());
    return;
  }
  bool fits = vt.rank() <= spec.result_shape.size();
  for (size_t i = 0; fits && i < vt.rank(); ++i) {
    const ir::Dim& have = vt.shape[vt.rank() - 1 - i];
    const ir::Dim& want = spec.result_shape[spec.result_shape.size() - 1 - i];
    fits = have == want || have.is_const(1);
  }
  if (!fits) {
    error(s.value->span, "cannot write " + vt.str() + " into the slice " + base->text + "[...] of shape [" +
                             ir::dims_to_string(spec.result_shape) + "]");
    return;
  }
  ir::Attrs a;
  a.slices = spec.axes;
  for (auto& ax : a.slices)
    if (ax.dynamic >= 0) ax.dynamic += 2;
  std::vector<ValueId> operands{old.v, *t};
  operands.insert(operands.end(), spec.dynamic.begin(), spec.dynamic.end());
  ValueId r = emit(ir::Op::SliceUpdate, operands, old_type, a, s.span);
  assign_slot(*slot, Val::tensor(r), s.span);
}

// The scalar bool tensor of a condition, or nullopt after an error. A static condition is
// returned in `static_value`.
static std::string condition_hint() {
  return "reduce it with all(...) or any(...), or choose elementwise with where(cond, a, b)";
}

void Lowerer::lower_if(const ast::Stmt& s) {
  Val c = lower_expr(*s.cond);
  if (c.kind == Val::Kind::Bool) {
    if (c.i)
      lower_block(*s.then_block, pred_);
    else if (s.else_block)
      lower_block(*s.else_block, pred_);
    return;
  }
  std::optional<ValueId> cv;
  if (c.is_tensor()) {
    const ir::Type& t = type_of(c.v);
    if (t.dtype != DType::Bool)
      error(s.cond->span, "an if condition must be bool[], got " + t.str() + "; compare it (e.g. `x != 0`)");
    else if (t.rank() != 0)
      error(s.cond->span,
            "an if condition must be a scalar bool[], got " + t.str() + "; " + condition_hint());
    else
      cv = c.v;
  } else if (!c.is_error()) {
    error(s.cond->span, "an if condition must be a bool[] value");
  }
  ValueId outer = pred_;
  // Even with a bad condition, check both branches for further errors.
  ValueId then_pred = cv ? pred_and(outer, *cv, s.cond->span) : outer;
  lower_block(*s.then_block, then_pred);
  if (s.else_block) {
    ValueId else_pred = cv ? pred_and_not(outer, *cv, s.cond->span) : outer;
    lower_block(*s.else_block, else_pred);
  }
  pred_ = outer;
}

void Lowerer::lower_break_continue(const ast::Stmt& s) {
  bool is_break = s.kind == ast::StmtKind::Break;
  if (ctx_.back().loops.empty()) {
    error(s.span, std::string(is_break ? "break" : "continue") + " outside of a loop");
    return;
  }
  LoopFrame& f = ctx_.back().loops.back();
  ValueId& flag = is_break ? f.broken : f.skipped;
  ValueId now = pred_ == kNoValue ? const_true(s.span) : pred_;
  flag = flag == kNoValue ? now : emit(ir::Op::Or, {flag, now}, ir::Type{DType::Bool, {}}, {}, s.span, false);
}

void Lowerer::lower_for(const ast::Stmt& s) {
  Val a = lower_expr(*s.range_start);
  Val b = lower_expr(*s.range_end);
  for (auto [v, e] : {std::pair{&a, s.range_start.get()}, std::pair{&b, s.range_end.get()}})
    if (v->kind == Val::Kind::Float || v->kind == Val::Kind::Bool) {
      error(e->span, "a for-loop bound must be an integer");
      *v = Val::error();
    }
  if (a.is_error() || b.is_error()) return;
  if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int) {
    int id = next_loop_id_++;
    // Try a device loop first; if the index is needed as a compile-time integer, unroll instead.
    // Everything the lowering mutates is saved so that the attempt can be rolled back.
    auto saved_slots = slots_;
    auto saved_ctx = ctx_;
    auto saved_states = state_slots_;
    ir::Block* saved_cur = cur_;
    ValueId saved_pred = pred_;
    size_t ops_before = cur_->ops.size(), hoist_before = hoist_pos_;
    bool had_error_before = had_error_;
    Diagnostics probe;
    Diagnostics* real = diags_;
    diags_ = &probe;
    try {
      device_for(s, a, b, id);
      diags_ = real;
      for (const auto& d : probe.all()) {
        auto& e = diags_->error(d.span, d.message);
        e.notes = d.notes;
      }
      return;
    } catch (const NeedsUnroll& n) {
      diags_ = real;
      had_error_ = had_error_before;
      slots_ = std::move(saved_slots);
      ctx_ = std::move(saved_ctx);
      state_slots_ = std::move(saved_states);
      cur_ = saved_cur;
      pred_ = saved_pred;
      size_t hoisted = hoist_pos_ - hoist_before;
      size_t from = ops_before + (cur_ == &fn_->body ? hoisted : 0);
      if (cur_->ops.size() > from)
        cur_->ops.erase(cur_->ops.begin() + static_cast<long>(from), cur_->ops.end());
      if (n.loop_id != id) throw;
    } catch (...) {
      // AbortEntry (a limit): the errors of the attempt are real.
      diags_ = real;
      for (const auto& d : probe.all()) {
        auto& e = diags_->error(d.span, d.message);
        e.notes = d.notes;
      }
      throw;
    }
    unroll_for(s, a.i, b.i);
    return;
  }
  device_for(s, a, b, -1);
}

void Lowerer::unroll_for(const ast::Stmt& s, int64_t begin, int64_t end) {
  int64_t trips = 0;
  if (end > begin && __builtin_sub_overflow(end, begin, &trips)) trips = std::numeric_limits<int64_t>::max();
  if (trips > 4096) {
    error(s.span, "this for loop must be unrolled (its index is used as a compile-time integer) but has " +
                      std::to_string(trips) + " iterations; the limit is 4096");
    return;
  }
  if (trips > opts_.limits.max_unrolled_iterations - budget_->unrolled) {
    budget_->exhausted = true;
    error(s.span,
          "unrolling this for loop (its index is used as a compile-time integer) takes the program past " +
              std::to_string(opts_.limits.max_unrolled_iterations) +
              " unrolled iterations in all (the max_unrolled_iterations "
              "limit; nested unrolled loops multiply)");
    throw AbortEntry{};
  }
  budget_->unrolled += trips;
  ValueId stmt_pred = pred_;
  ctx_.back().loops.push_back(LoopFrame{});
  for (int64_t k = begin; k < end; ++k) {
    LoopFrame& f = ctx_.back().loops.back();
    f.skipped = kNoValue;
    ValueId iter_pred = f.broken == kNoValue ? stmt_pred : pred_and_not(stmt_pred, f.broken, s.span);
    pred_ = iter_pred;
    ctx_.back().scopes.emplace_back();
    bind(s.names[0], s.name_spans[0], Val::integer(k), false);
    lower_block(*s.body, iter_pred, false);
    ctx_.back().scopes.pop_back();
  }
  ctx_.back().loops.pop_back();
  pred_ = stmt_pred;
}

void Lowerer::device_for(const ast::Stmt& s, const Val& a, const Val& b, int loop_id) {
  auto start = to_tensor(a, DType::I32, s.range_start->span);
  auto end = to_tensor(b, DType::I32, s.range_end->span);
  if (!start || !end) return;
  for (auto [v, e] : {std::pair{*start, s.range_start.get()}, std::pair{*end, s.range_end.get()}}) {
    const ir::Type& t = type_of(v);
    if (t.rank() != 0 || !is_int(t.dtype)) {
      error(e->span, "a for-loop bound must be an integer scalar, got " + t.str());
      return;
    }
  }
  if (type_of(*start).dtype != DType::I32)
    start = emit(
        ir::Op::Cast, {*start}, ir::Type{DType::I32, {}},
        [] {
          ir::Attrs x;
          x.dtype = DType::I32;
          return x;
        }(),
        s.range_start->span);
  if (type_of(*end).dtype != DType::I32)
    end = emit(
        ir::Op::Cast, {*end}, ir::Type{DType::I32, {}},
        [] {
          ir::Attrs x;
          x.dtype = DType::I32;
          return x;
        }(),
        s.range_end->span);
  int64_t max_trips = -1;
  if (a.kind == Val::Kind::Int && b.kind == Val::Kind::Int) {
    max_trips = 0;
    if (b.i > a.i && __builtin_sub_overflow(b.i, a.i, &max_trips))
      max_trips = std::numeric_limits<int64_t>::max();
    if (max_trips > opts_.limits.max_loop_trips)
      error(s.span, "this for loop has " + std::to_string(max_trips) +
                        " iterations; a device loop runs at most " +
                        std::to_string(opts_.limits.max_loop_trips) + " (the max_loop_trips limit)");
  }
  if (max_trips < 0 && opts_.require_loop_bounds)
    error(s.span,
          "this for loop runs over a run-time range and has no compile-time trip bound (required when "
          "loops must be unrolled by predication); use compile-time bounds");
  ir::Type i32{DType::I32, {}};
  ValueId cond0 = emit(ir::Op::Lt, {*start, *end}, ir::Type{DType::Bool, {}}, {}, s.span);
  ValueId init = pred_and(pred_, cond0, s.span);
  // The hidden counter: carried, never assignable by the program.
  Slot counter;
  counter.name = "";
  counter.val = Val::tensor(*start);
  counter.is_mutable = true;
  slots_.push_back(counter);
  size_t counter_slot = slots_.size() - 1;
  ValueId end_v = *end;
  device_loop(s, init, max_trips, {counter_slot}, [&]() -> ValueId {
    ValueId i = slots_[counter_slot].val.v;
    ctx_.back().scopes.emplace_back();
    bind(s.names[0], s.name_spans[0], Val::tensor(i, loop_id), false);
    lower_block(*s.body, kNoValue, false);
    ctx_.back().scopes.pop_back();
    ValueId next = emit(ir::Op::Add, {i, constant(DType::I32, 1, s.span)}, i32, {}, s.span, false);
    slots_[counter_slot].val = Val::tensor(next);
    return emit(ir::Op::Lt, {next, end_v}, ir::Type{DType::Bool, {}}, {}, s.span, false);
  });
}

void Lowerer::lower_while(const ast::Stmt& s) {
  int64_t max_trips = -1;
  if (!s.max_trips && opts_.require_loop_bounds)
    error(s.span,
          "this while loop has no trip bound; write `while COND max N { ... }` (required when loops "
          "must be unrolled by predication)");
  if (s.max_trips) {
    auto m = require_int(lower_expr(*s.max_trips), "the `max` trip bound of a while loop");
    if (m && *m < 0)
      error(s.max_trips->span, "the `max` trip bound must not be negative");
    else if (m && *m > opts_.limits.max_loop_trips)
      error(s.max_trips->span, "the `max` trip bound " + std::to_string(*m) + " is above the limit of " +
                                   std::to_string(opts_.limits.max_loop_trips) +
                                   " trips of a device loop (the max_loop_trips limit)");
    else if (m)
      max_trips = *m;
  }
  auto cond_value = [&](Span span) -> std::optional<ValueId> {
    Val c = lower_expr(*s.cond);
    if (c.kind == Val::Kind::Bool) return constant(DType::Bool, static_cast<double>(c.i), span);
    if (c.is_tensor()) {
      const ir::Type& t = type_of(c.v);
      if (t.dtype == DType::Bool && t.rank() == 0) return c.v;
      error(s.cond->span, "a while condition must be a scalar bool[], got " + t.str() + "; " +
                              (t.dtype == DType::Bool ? condition_hint() : "compare it (e.g. `x != 0`)"));
    } else if (!c.is_error()) {
      error(s.cond->span, "a while condition must be a bool[] value");
    }
    return std::nullopt;
  };
  auto c0 = cond_value(s.cond->span);
  ValueId init = c0 ? pred_and(pred_, *c0, s.cond->span) : const_true(s.span);
  device_loop(s, init, max_trips, {}, [&]() -> ValueId {
    lower_block(*s.body, kNoValue);
    auto c = cond_value(s.cond->span);
    return c ? *c : constant(DType::Bool, 0, s.span);
  });
}

void Lowerer::device_loop(const ast::Stmt& s, ValueId cond0, int64_t max_trips,
                          const std::vector<size_t>& extra, const std::function<ValueId()>& body) {
  std::vector<size_t> carried = carried_candidates();
  for (size_t e : extra)
    if (std::find(carried.begin(), carried.end(), e) == carried.end()) carried.push_back(e);
  auto block = std::make_shared<ir::Block>();
  std::vector<Val> saved;
  std::vector<ValueId> saved_decl_preds;
  for (size_t c : carried) {
    saved.push_back(slots_[c].val);
    saved_decl_preds.push_back(slots_[c].decl_pred);
    ValueId p = fn_->new_value(type_of(slots_[c].val.v), slots_[c].name);
    block->params.push_back(p);
    slots_[c].val = Val::tensor(p);
    // Inside the body the value comes from the previous iteration, not from the declaration.
    slots_[c].decl_pred = kNoValue - 1;
  }
  ir::Block* outer = cur_;
  ValueId outer_pred = pred_;
  cur_ = block.get();
  pred_ = kNoValue;
  ctx_.back().loops.push_back(LoopFrame{});
  ValueId next = body();
  LoopFrame frame = ctx_.back().loops.back();
  ctx_.back().loops.pop_back();
  if (frame.broken != kNoValue) {
    ValueId not_broken = emit(ir::Op::Not, {frame.broken}, ir::Type{DType::Bool, {}}, {}, s.span, false);
    next = emit(ir::Op::And, {next, not_broken}, ir::Type{DType::Bool, {}}, {}, s.span, false);
  }
  cur_ = outer;
  pred_ = outer_pred;

  std::unordered_map<ValueId, ValueId> repl;
  std::vector<ValueId> operands{cond0}, params, yields{next};
  std::vector<size_t> kept;
  for (size_t i = 0; i < carried.size(); ++i) {
    size_t c = carried[i];
    const Val& fin = slots_[c].val;
    ValueId p = block->params[i];
    if (!fin.is_tensor() || fin.v == p || type_of(fin.v) != type_of(p)) {
      repl[p] = saved[i].v;
      continue;
    }
    kept.push_back(i);
    operands.push_back(saved[i].v);
    params.push_back(p);
    yields.push_back(fin.v);
  }
  block->params = params;
  block->yields = yields;
  ir::replace_uses(*block, repl);

  ir::Operation loop;
  loop.op = ir::Op::Loop;
  loop.operands = operands;
  loop.loc = s.span;
  loop.attrs.max_trips = max_trips;
  loop.body = block;
  for (size_t i : kept) loop.results.push_back(fn_->new_value(type_of(saved[i].v), slots_[carried[i]].name));
  for (size_t i = 0; i < carried.size(); ++i) {
    slots_[carried[i]].val = saved[i];
    slots_[carried[i]].decl_pred = saved_decl_preds[i];
  }
  for (size_t k = 0; k < kept.size(); ++k) slots_[carried[kept[k]]].val = Val::tensor(loop.results[k]);
  cur_->ops.push_back(std::move(loop));
}

}  // namespace grape::frontend
