#include "ir/passes/dce.h"

#include <unordered_set>

namespace grape::ir {
namespace {

using Live = std::unordered_set<ValueId>;

void mark_uses(const Operation& op, Live& live) {
  for (ValueId v : op.operands) live.insert(v);
  if (op.pred != kNoValue) live.insert(op.pred);
}

bool has_side_effect_inside(const Operation& op) {
  if (has_side_effect(op.op)) return true;
  bool found = false;
  if (op.body) for_each_op(*op.body, [&](const Operation& o) { found = found || has_side_effect(o.op); });
  return found;
}

// Prunes carried values of a loop whose results are dead and which do not feed (through the body)
// the continue condition or another live carried value.
bool prune_loop(Function& f, Operation& loop, const Live& live_after) {
  Block& body = *loop.body;
  size_t n = loop.results.size();
  std::vector<bool> keep(n, false);
  for (size_t i = 0; i < n; ++i) keep[i] = live_after.count(loop.results[i]) > 0;
  // Fixed point: a carried value is needed if the condition or a kept yield depends on its param.
  bool grew = true;
  while (grew) {
    grew = false;
    Live need{body.yields[0]};
    for (size_t i = 0; i < n; ++i)
      if (keep[i]) need.insert(body.yields[i + 1]);
    for (auto it = body.ops.rbegin(); it != body.ops.rend(); ++it) {
      bool used = has_side_effect_inside(*it);
      for (ValueId r : it->results) used = used || need.count(r);
      if (used) {
        mark_uses(*it, need);
        if (it->body) for_each_op(*it->body, [&](const Operation& o) { mark_uses(o, need); });
        if (it->body) for (ValueId y : it->body->yields) need.insert(y);
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (!keep[i] && need.count(body.params[i])) keep[i] = grew = true;
  }
  bool changed = false;
  std::vector<ValueId> operands{loop.operands[0]}, results, params, yields{body.yields[0]};
  for (size_t i = 0; i < n; ++i) {
    if (!keep[i]) {
      changed = true;
      continue;
    }
    operands.push_back(loop.operands[i + 1]);
    results.push_back(loop.results[i]);
    params.push_back(body.params[i]);
    yields.push_back(body.yields[i + 1]);
  }
  (void)f;
  if (changed) {
    loop.operands = operands;
    loop.results = results;
    body.params = params;
    body.yields = yields;
  }
  return changed;
}

bool dce_block(Function& f, Block& b, Live live) {
  bool changed = false;
  for (ValueId y : b.yields) live.insert(y);
  std::vector<bool> keep(b.ops.size(), false);
  for (size_t i = b.ops.size(); i-- > 0;) {
    Operation& op = b.ops[i];
    bool used = has_side_effect_inside(op);
    for (ValueId r : op.results) used = used || live.count(r);
    if (!used) continue;
    keep[i] = true;
    if (op.body) {
      changed |= prune_loop(f, op, live);
      Live inner = live;
      changed |= dce_block(f, *op.body, inner);
      // Everything the body still uses from outside must stay alive.
      for_each_op(*op.body, [&](const Operation& o) { mark_uses(o, live); });
      for (ValueId y : op.body->yields) live.insert(y);
    }
    mark_uses(op, live);
  }
  std::vector<Operation> kept;
  for (size_t i = 0; i < b.ops.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(b.ops[i]));
    else changed = true;
  }
  b.ops = std::move(kept);
  return changed;
}

}  // namespace

bool eliminate_dead_code(Function& f) {
  bool any = false;
  while (dce_block(f, f.body, {})) any = true;
  return any;
}

}  // namespace grape::ir
