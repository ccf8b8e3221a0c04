#include "ir/passes/cse.h"

#include <cstring>
#include <map>
#include <tuple>
#include <unordered_map>

#include "ir/passes/rewrite.h"

namespace grape::ir {
namespace {

struct Key {
  Op op;
  std::vector<ValueId> operands;
  ValueId pred;
  std::string attrs;  // printed form; Attrs has no hash and this is not a hot path
  bool operator<(const Key& o) const {
    return std::tie(op, operands, pred, attrs) < std::tie(o.op, o.operands, o.pred, o.attrs);
  }
};

std::string attr_key(const Attrs& a) {
  std::string s = std::to_string(static_cast<int>(a.dtype)) + "|" + std::to_string(a.fvalue) + "|" +
                  std::to_string(a.ivalue) + "|" + std::to_string(a.axis) + "|" + std::to_string(a.k) + "|" +
                  std::to_string(a.keepdims) + "|" + std::to_string(a.eps) + "|" + std::to_string(a.approx_tanh) +
                  "|" + a.name + "|" + std::to_string(a.index) + "|" + std::to_string(a.max_trips) + "|";
  for (auto x : a.axes) s += std::to_string(x) + ",";
  s += "|" + dims_to_string(a.shape) + "|";
  for (const auto& sl : a.slices)
    s += sl.start.str() + ":" + sl.size.str() + ":" + std::to_string(sl.step) + ":" + std::to_string(sl.squeeze) +
         ":" + std::to_string(sl.dynamic) + ";";
  // fvalue printed by to_string loses precision; add the exact bits.
  uint64_t bits;
  static_assert(sizeof bits == sizeof a.fvalue);
  std::memcpy(&bits, &a.fvalue, sizeof bits);
  return s + std::to_string(bits);
}

bool cse_block(Block& b, std::map<Key, ValueId> available, std::unordered_map<ValueId, ValueId>& repl) {
  bool changed = false;
  std::vector<Operation> kept;
  for (auto& op : b.ops) {
    for (auto& v : op.operands) {
      auto it = repl.find(v);
      if (it != repl.end()) v = it->second;
    }
    if (op.pred != kNoValue && repl.count(op.pred)) op.pred = repl.at(op.pred);
    if (op.body) {
      changed |= cse_block(*op.body, available, repl);
      kept.push_back(std::move(op));
      continue;
    }
    if (has_side_effect(op.op) || op.op == Op::Param || op.results.size() != 1) {
      kept.push_back(std::move(op));
      continue;
    }
    Key key{op.op, op.operands, op.pred, attr_key(op.attrs)};
    auto it = available.find(key);
    if (it != available.end()) {
      repl[op.results[0]] = it->second;
      changed = true;
      continue;
    }
    available.emplace(std::move(key), op.results[0]);
    kept.push_back(std::move(op));
  }
  b.ops = std::move(kept);
  for (auto& y : b.yields) {
    auto it = repl.find(y);
    if (it != repl.end()) y = it->second;
  }
  return changed;
}

}  // namespace

bool eliminate_common_subexpressions(Function& f) {
  std::unordered_map<ValueId, ValueId> repl;
  bool changed = cse_block(f.body, {}, repl);
  replace_uses(f.body, repl);
  return changed;
}

}  // namespace grape::ir
