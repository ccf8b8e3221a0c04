#include "ir/passes/predicated_selects.h"

#include <unordered_map>
#include <unordered_set>

namespace grape::ir {
namespace {

// An unpredicated select: its predicate and branches.
struct Sel {
  ValueId pred, taken, other;
};

// Selects of enclosing blocks stay visible in nested ones (a Scope is copied per block).
struct Scope {
  std::unordered_map<ValueId, Sel> selects;
  std::unordered_set<ValueId> false_constants;

  // Whether q holds only where p does: q is p, or a nested `if`'s predicate
  // select(q', r, false) with q' implying p.
  bool implies(ValueId q, ValueId p) const {
    for (int depth = 0; depth < 64; ++depth) {
      if (q == p) return true;
      auto it = selects.find(q);
      if (it == selects.end() || !false_constants.count(it->second.other)) return false;
      q = it->second.pred;
    }
    return false;
  }
  // What v is wherever p holds, through selects whose predicate p implies.
  ValueId when_true(ValueId v, ValueId p) const {
    for (auto it = selects.find(v); it != selects.end() && implies(p, it->second.pred); it = selects.find(v))
      v = it->second.taken;
    return v;
  }
  // What v is wherever p does not hold, through selects whose predicate implies p.
  ValueId when_false(ValueId v, ValueId p) const {
    for (auto it = selects.find(v); it != selects.end() && implies(it->second.pred, p); it = selects.find(v))
      v = it->second.other;
    return v;
  }
};

bool fold_block(const Function& f, Block& b, Scope s) {
  bool changed = false;
  for (Operation& op : b.ops) {
    if (op.pred != kNoValue) {
      for (ValueId& v : op.operands) {
        ValueId w = s.when_true(v, op.pred);
        changed |= w != v;
        v = w;
      }
    } else if (op.op == Op::Select && op.operands.size() == 3) {
      const ValueId p = op.operands[0];
      ValueId a = s.when_true(op.operands[1], p), c = s.when_false(op.operands[2], p);
      changed |= a != op.operands[1] || c != op.operands[2];
      op.operands[1] = a;
      op.operands[2] = c;
      if (op.results.size() == 1) s.selects[op.results[0]] = {p, a, c};
    } else if (op.op == Op::Constant && op.results.size() == 1 && op.attrs.ivalue == 0 &&
               op.attrs.fvalue == 0) {
      const Type& t = f.type(op.results[0]);
      if (t.dtype == DType::Bool && t.rank() == 0) s.false_constants.insert(op.results[0]);
    }
    if (op.body) changed |= fold_block(f, *op.body, s);
  }
  return changed;
}

}  // namespace

bool fold_predicated_selects(Function& f) { return fold_block(f, f.body, {}); }

}  // namespace grape::ir
