#include "ir/passes/narrow_updates.h"

#include <unordered_map>

namespace grape::ir {
namespace {

void count_uses(const Block& b, std::unordered_map<ValueId, int>& uses) {
  for (const auto& op : b.ops) {
    for (ValueId v : op.operands) ++uses[v];
    if (op.pred != kNoValue) ++uses[op.pred];
    if (op.body) count_uses(*op.body, uses);
  }
  for (ValueId v : b.yields) ++uses[v];
}

// The shape of the region an update's slices select (squeezed axes dropped); false when an axis
// has a step (then the rewrite is not attempted).
bool region_shape(const Attrs& a, std::vector<Dim>& shape) {
  shape.clear();
  for (const SliceAxis& s : a.slices) {
    if (s.step != 1) return false;
    if (!s.squeeze) shape.push_back(s.size);
  }
  return true;
}

// When a value has been computed, as far as this pass can tell: an op under predicate q leaves
// its result undefined when q is false, and an unpredicated op reading an undefined value (a
// select whose other branch was taken) passes that on.
struct Defined {
  enum Kind { Unknown, Always, When } kind = Unknown;
  ValueId pred = kNoValue;  // When: defined whenever this predicate holds
};

using Definedness = std::unordered_map<ValueId, Defined>;

Defined defined(const Definedness& d, ValueId v) {
  auto it = d.find(v);
  return it == d.end() ? Defined{} : it->second;
}

Defined result_definedness(const Operation& op, const Definedness& d) {
  if (op.pred != kNoValue) return {Defined::When, op.pred};
  if (op.op == Op::Select && op.operands.size() == 3) {
    // select(p, a, b) reads a only where p holds and b only where it does not.
    Defined a = defined(d, op.operands[1]), b = defined(d, op.operands[2]);
    bool a_ok = a.kind == Defined::Always || (a.kind == Defined::When && a.pred == op.operands[0]);
    return a_ok && b.kind == Defined::Always ? Defined{Defined::Always} : Defined{};
  }
  // (A loop's results: see add() in narrow_block.)
  for (ValueId v : op.operands)
    if (defined(d, v).kind != Defined::Always) return {};
  return {Defined::Always};
}

bool narrow_block(Function& f, Block& b, const std::unordered_map<ValueId, int>& uses, Definedness d) {
  bool changed = false;
  std::unordered_map<ValueId, size_t> def;  // result -> index of its op in this block
  std::vector<Operation> out;
  out.reserve(b.ops.size());
  auto add = [&](Operation op) {
    Defined r = result_definedness(op, d);
    for (size_t i = 0; i < op.results.size(); ++i) {
      ValueId v = op.results[i];
      // A loop's results are its carried values: set where their initial values are.
      if (op.op == Op::Loop && op.pred == kNoValue && i + 1 < op.operands.size())
        r = defined(d, op.operands[i + 1]);
      d[v] = r;
      def[v] = out.size();
    }
    out.push_back(std::move(op));
  };
  for (auto& op : b.ops) {
    if (op.body) {
      // A carried value is its initial value or a yield, which the lowering merges on every
      // path of the body: set wherever the initial value is (and the loop runs).
      Definedness inner = d;
      for (size_t i = 0; i < op.body->params.size() && i + 1 < op.operands.size(); ++i)
        inner[op.body->params[i]] =
            op.pred == kNoValue ? defined(d, op.operands[i + 1]) : Defined{Defined::When, op.pred};
      changed |= narrow_block(f, *op.body, uses, inner);
    }
    if (op.op != Op::Select || op.pred != kNoValue || op.operands.size() != 3) {
      add(std::move(op));
      continue;
    }
    ValueId p = op.operands[0], u = op.operands[1], x = op.operands[2];
    auto du = def.find(u);
    auto n = uses.find(u);
    bool match = du != def.end() && n != uses.end() && n->second == 1;
    const Operation* upd = match ? &out[du->second] : nullptr;
    if (match && upd->op == Op::Take && upd->pred == p && upd->operands[0] == x &&
        defined(d, x).kind == Defined::Always) {
      // select(p, take(x, idx) if p, x) = take(x, select(p, idx, arange(n))) when idx picks n
      // entries of an axis of n: one gather instead of a gather and a select of the whole tensor.
      const Operation take = *upd;
      ValueId idx = take.operands[1];
      // A copy: f.new_value below may move the value table (a reference would dangle).
      const Type it = f.type(idx);
      const auto axis = static_cast<size_t>(take.attrs.axis);
      if (it.rank() == 1 && axis < f.type(x).rank() && it.shape[0] == f.type(x).shape[axis] &&
          (it.dtype == DType::I32 || it.dtype == DType::I64)) {
        Operation ident;
        ident.op = Op::Arange;
        ident.attrs.dtype = it.dtype;
        ident.attrs.shape = it.shape;
        ident.loc = take.loc;
        ident.results = {f.new_value(it, "identity")};
        Operation pick;
        pick.op = Op::Select;
        pick.operands = {p, idx, ident.results[0]};
        pick.loc = op.loc;
        pick.results = {f.new_value(it)};
        Operation gather = take;
        gather.pred = kNoValue;
        gather.operands[1] = pick.results[0];
        gather.results = op.results;
        add(std::move(ident));
        add(std::move(pick));
        add(std::move(gather));
        changed = true;
        continue;
      }
    }
    match = match && upd->op == Op::SliceUpdate && upd->pred == p && upd->operands[0] == x &&
            upd->results.size() == 1;
    // The rewritten update runs whatever %p is, so it may only read values that are computed then.
    match = match && defined(d, x).kind == Defined::Always;
    for (size_t k = 2; match && k < upd->operands.size(); ++k)
      match = defined(d, upd->operands[k]).kind == Defined::Always;
    std::vector<Dim> region;
    match = match && region_shape(upd->attrs, region) && f.type(upd->operands[1]).shape == region;
    if (!match) {
      add(std::move(op));
      continue;
    }
    const Operation update = *upd;
    ValueId v = update.operands[1];
    // The slice of x the update would overwrite: the same axes, its dynamic starts one operand
    // earlier (a slice has no value operand).
    Operation old;
    old.op = Op::Slice;
    old.operands = {x};
    old.operands.insert(old.operands.end(), update.operands.begin() + 2, update.operands.end());
    old.attrs.slices = update.attrs.slices;
    for (auto& s : old.attrs.slices)
      if (s.dynamic >= 0) s.dynamic -= 1;
    old.loc = update.loc;
    old.results = {f.new_value(f.type(v), "old")};
    Operation pick;
    pick.op = Op::Select;
    pick.operands = {p, v, old.results[0]};
    pick.loc = op.loc;
    pick.results = {f.new_value(f.type(v))};
    Operation write = update;
    write.pred = kNoValue;
    write.operands[1] = pick.results[0];
    write.results = op.results;  // the select's value, so no use changes
    add(std::move(old));
    add(std::move(pick));
    add(std::move(write));
    changed = true;
  }
  b.ops = std::move(out);
  return changed;
}

}  // namespace

bool narrow_predicated_updates(Function& f) {
  std::unordered_map<ValueId, int> uses;
  count_uses(f.body, uses);
  Definedness d;
  for (const auto& p : f.params) d[p.value] = {Defined::Always};
  return narrow_block(f, f.body, uses, d);
}

}  // namespace grape::ir
