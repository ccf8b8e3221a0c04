#include "ir/passes/rewrite.h"

namespace grape::ir {

static ValueId resolve(ValueId v, const std::unordered_map<ValueId, ValueId>& repl) {
  for (int guard = 0; guard < 1 << 20; ++guard) {
    auto it = repl.find(v);
    if (it == repl.end()) return v;
    v = it->second;
  }
  return v;
}

void replace_uses(Block& b, const std::unordered_map<ValueId, ValueId>& repl) {
  if (repl.empty()) return;
  for (auto& op : b.ops) {
    for (auto& v : op.operands) v = resolve(v, repl);
    if (op.pred != kNoValue) op.pred = resolve(op.pred, repl);
    if (op.body) replace_uses(*op.body, repl);
  }
  for (auto& v : b.yields) v = resolve(v, repl);
}

}  // namespace grape::ir
