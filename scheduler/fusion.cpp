#include "scheduler/fusion.h"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "scheduler/launch.h"
#include "scheduler/sequence.h"

namespace grape::scheduler {

using ir::Op;
using ir::Operation;
using ir::ValueId;

const char* role_name(OpRole r) {
  switch (r) {
    case OpRole::Executor: return "executor";
    case OpRole::Alias: return "alias";
    case OpRole::Root: return "root";
    case OpRole::Inlined: return "inlined";
    case OpRole::Core: return "core";
    case OpRole::RowPrologue: return "row_prologue";
    case OpRole::AttentionScores: return "attention_scores";
    case OpRole::PartRoot: return "part_root";
  }
  return "?";
}

bool is_pointwise(Op op) {
  switch (ir::fusion_pattern(op)) {
    case ir::FusionPattern::kPointwise:
    case ir::FusionPattern::kView:
    case ir::FusionPattern::kCreator: return true;
    default: return false;
  }
}

namespace {

bool is_executor(Op op) { return ir::fusion_pattern(op) == ir::FusionPattern::kExecutor; }

bool is_free_creator(Op op) { return ir::fusion_pattern(op) == ir::FusionPattern::kCreator; }

bool can_be_core(Op op) {
  switch (ir::fusion_pattern(op)) {
    case ir::FusionPattern::kReduce:
    case ir::FusionPattern::kRow:
    case ir::FusionPattern::kContraction: return true;
    default: return false;
  }
}

struct Use {
  const Operation* op;
  size_t slot;
};

// GRAPE_SIBLINGS=0 keeps every product in a kernel of its own (the same-run A/B baseline).
bool siblings_enabled() {
  static const bool on = env_knob("GRAPE_SIBLINGS", 0, 1, 1) == 1;
  return on;
}

// Whether group g may be a part of a kernel of sibling products (fusion.h): a linear with a 16-bit
// weight of the program (a materialised [N, K] buffer, N a constant) reading a materialised A of
// the same type, with no row prologue.
bool sibling_candidate(const ir::Function& f, const std::map<ValueId, const Operation*>& producer,
                       const FusionGroup& g) {
  const Operation* c = g.core;
  if (!c || c->op != Op::Linear || g.row_prologue || g.attention_scores || !g.parts.empty() ||
      g.outputs.size() != 1)
    return false;
  const DType dt = f.type(c->results[0]).dtype;
  const ir::Type& a = f.type(c->operands[0]);
  const ir::Type& w = f.type(c->operands[1]);
  if ((dt != DType::F16 && dt != DType::BF16) || a.dtype != dt || w.dtype != dt || w.rank() != 2 ||
      a.rank() < 1 || !w.shape[0].is_const())
    return false;
  if (std::find(g.inputs.begin(), g.inputs.end(), c->operands[0]) == g.inputs.end()) return false;
  auto it = producer.find(c->operands[1]);
  return it != producer.end() && it->second->op == Op::Weight;
}

bool contains(const std::vector<ValueId>& vs, ValueId v) {
  return std::find(vs.begin(), vs.end(), v) != vs.end();
}

void add_unique(std::vector<ValueId>& to, const std::vector<ValueId>& from) {
  for (ValueId v : from)
    if (!contains(to, v)) to.push_back(v);
}

// Merges sibling products (fusion.h) of one block's groups, in launch order.
void merge_siblings(const ir::Function& f, const std::map<ValueId, const Operation*>& producer,
                    const std::map<const Operation*, size_t>& pos, std::map<const Operation*, OpRole>& roles,
                    std::vector<FusionGroup>& groups) {
  std::vector<bool> absorbed(groups.size(), false);
  for (size_t i = 0; i < groups.size(); ++i) {
    if (absorbed[i] || !sibling_candidate(f, producer, groups[i])) continue;
    FusionGroup merged = groups[i];
    merged.parts = {groups[i]};
    const ValueId a = groups[i].core->operands[0];
    const size_t at = pos.at(groups[i].root);
    for (size_t j = i + 1; j < groups.size() && merged.parts.size() < kMaxSiblingParts; ++j) {
      const FusionGroup& g = groups[j];
      if (absorbed[j] || g.pred != merged.pred || !sibling_candidate(f, producer, g) ||
          g.core->operands[0] != a)
        continue;
      // The kernel runs at the first part's place: what g reads must exist there (a weight always
      // does; a value of an enclosing block or a parameter too).
      bool ready = true;
      for (ValueId v : g.inputs) {
        auto p = producer.find(v);
        if (p == producer.end() || p->second->op == Op::Weight) continue;
        auto q = pos.find(p->second);
        if (q != pos.end() && q->second >= at) ready = false;
      }
      std::vector<ValueId> buffers = merged.inputs;
      add_unique(buffers, g.inputs);
      if (!ready || buffers.size() + merged.outputs.size() + g.outputs.size() > kMaxSiblingBuffers) continue;
      merged.parts.push_back(g);
      merged.inputs = buffers;
      merged.outputs.insert(merged.outputs.end(), g.outputs.begin(), g.outputs.end());
      merged.ops.insert(merged.ops.end(), g.ops.begin(), g.ops.end());
      roles[g.root] = OpRole::PartRoot;
      absorbed[j] = true;
    }
    if (merged.parts.size() < 2) continue;
    std::sort(merged.ops.begin(), merged.ops.end(),
              [&](const Operation* x, const Operation* y) { return pos.at(x) < pos.at(y); });
    groups[i] = std::move(merged);
  }
  size_t kept = 0;
  for (size_t i = 0; i < groups.size(); ++i)
    if (!absorbed[i]) {
      if (kept != i) groups[kept] = std::move(groups[i]);  // never a self-move: it empties vectors
      ++kept;
    }
  groups.resize(kept);
}

// The memory a value may be: through views that are aliases of their operand's bytes and through
// updates (which may be done in place), and one value per state (a state read twice is one
// storage). Sibling updates and folded updates compare what kernels read and write by it.
class Memory {
 public:
  Memory(const std::map<ValueId, const Operation*>& producer, const std::map<const Operation*, OpRole>& roles)
      : producer_(producer), roles_(roles) {}

  ValueId of(ValueId v) {
    for (;;) {
      auto p = producer_.find(v);
      if (p == producer_.end()) return v;
      const Operation* op = p->second;
      if (op->op == Op::StateRead) return state_value_.emplace(op->attrs.name, v).first->second;
      if (op->op == Op::SliceUpdate) {
        v = op->operands.at(0);
        continue;
      }
      auto r = roles_.find(op);
      if (r == roles_.end() || r->second != OpRole::Alias || op->operands.empty()) return v;
      v = op->operands[0];
    }
  }

  // Whether group g reads `memory` (an update's result is its operand's memory, so this also covers
  // reading what an update writes).
  bool read_by(const FusionGroup& g, ValueId memory) {
    for (ValueId v : g.inputs)
      if (of(v) == memory) return true;
    return false;
  }

 private:
  const std::map<ValueId, const Operation*>& producer_;
  const std::map<const Operation*, OpRole>& roles_;
  std::map<std::string, ValueId> state_value_;
};

bool is_single_update(const FusionGroup& g) {
  return g.root->op == Op::SliceUpdate && g.core == g.root && g.parts.empty() && !g.row_prologue &&
         !g.attention_scores && g.outputs.size() == 1;
}

// GRAPE_FOLD_UPDATES=0 keeps every slice_update in a kernel of its own (the same-run A/B baseline).
bool fold_updates_enabled() {
  static const bool on = env_knob("GRAPE_FOLD_UPDATES", 0, 1, 1) == 1;
  return on;
}

// Folds updates into the epilogue of the product whose output they write (fusion.h), in launch
// order; a folded update's group is removed.
void fold_updates(const ir::Function& f, const ir::Block& blk,
                  const std::map<ValueId, const Operation*>& producer,
                  const std::map<const Operation*, size_t>& pos, std::map<const Operation*, OpRole>& roles,
                  std::vector<FusionGroup>& groups) {
  Memory memory(producer, roles);
  std::vector<bool> folded(groups.size(), false);
  auto member = [](const FusionGroup& g, const Operation* op) {
    return std::find(g.ops.begin(), g.ops.end(), op) != g.ops.end();
  };
  for (size_t j = 0; j < groups.size(); ++j) {
    const FusionGroup& ug = groups[j];
    if (!is_single_update(ug)) continue;
    const Operation& u = *ug.root;
    // The value: views of a product's output, perhaps as the taken branch of a select on the
    // product's predicate whose other branch is the region's old contents.
    ValueId v = u.operands.at(1);
    ValueId need_pred = ug.pred;
    auto in_group = [&](ValueId x) -> const Operation* {
      auto p = producer.find(x);
      return p != producer.end() && member(ug, p->second) ? p->second : nullptr;
    };
    if (const Operation* sel = in_group(v); sel && sel->op == Op::Select && ug.pred == ir::kNoValue) {
      const Operation* old = in_group(sel->operands.at(2));
      if (!old || !reads_update_region(u, *old)) continue;
      need_pred = sel->operands[0];
      v = sel->operands[1];
    }
    std::vector<const Operation*> views;
    for (const Operation* op = in_group(v); op; op = in_group(v)) {
      const bool view =
          op->op == Op::Reshape || op->op == Op::Permute || (op->op == Op::Slice && op->operands.size() == 1);
      if (!view) break;
      views.insert(views.begin(), op);
      v = op->operands[0];
    }
    if (f.type(v).dtype != f.type(u.results[0]).dtype) continue;
    // The product: an earlier group of that predicate whose output v is.
    size_t gi = j;
    for (size_t i = 0; i < j; ++i)
      if (!folded[i] && contains(groups[i].outputs, v)) gi = i;
    if (gi == j) continue;
    FusionGroup& g = groups[gi];
    if (!g.core || (g.core->op != Op::MatMul && g.core->op != Op::Linear) || g.attention_scores ||
        g.pred != need_pred)
      continue;
    // Moving the update up to the product's place: no loop in between, what it reads exists there,
    // and no kernel in between (nor the product) reads or writes the memory it updates.
    const size_t at = pos.at(g.root);
    bool ok = true;
    for (size_t i = at + 1; i < pos.at(&u) && ok; ++i) ok = !blk.ops[i].body;
    for (ValueId x : ug.inputs) {
      auto p = producer.find(x);
      if (x == v || p == producer.end()) continue;
      auto q = pos.find(p->second);
      ok = ok && (q == pos.end() || q->second < at);
    }
    const ValueId mx = memory.of(u.operands[0]);
    ok = ok && !memory.read_by(g, mx);
    for (const auto& other : g.folded_updates) ok = ok && memory.of(other.update->operands[0]) != mx;
    for (size_t i = gi + 1; i < j && ok; ++i) {
      if (folded[i]) continue;
      const FusionGroup& k = groups[i];
      ok = !memory.read_by(k, mx);
      for (ValueId o : k.outputs) ok = ok && memory.of(o) != mx;
    }
    std::vector<ValueId> inputs = g.inputs;
    for (ValueId x : ug.inputs)
      if (x != v && !contains(inputs, x)) inputs.push_back(x);
    if (!ok || inputs.size() + g.outputs.size() + 1 > kMaxSiblingBuffers) continue;
    g.inputs = std::move(inputs);
    g.outputs.push_back(u.results[0]);
    g.ops.insert(g.ops.end(), ug.ops.begin(), ug.ops.end());
    std::sort(g.ops.begin(), g.ops.end(),
              [&](const Operation* x, const Operation* y) { return pos.at(x) < pos.at(y); });
    g.folded_updates.push_back({&u, v, views});
    roles[&u] = OpRole::PartRoot;
    folded[j] = true;
  }
  size_t kept = 0;
  for (size_t i = 0; i < groups.size(); ++i)
    if (!folded[i]) {
      if (kept != i) groups[kept] = std::move(groups[i]);
      ++kept;
    }
  groups.resize(kept);
}

// GRAPE_SIBLING_UPDATES=0 keeps every slice_update in a kernel of its own (the same-run A/B
// baseline).
bool sibling_updates_enabled() {
  static const bool on = env_knob("GRAPE_SIBLING_UPDATES", 0, 1, 1) == 1;
  return on;
}

// Merges runs of sibling updates (fusion.h) of one block's groups, in launch order. The kernel runs
// where the last of them was: the earlier ones' outputs must have no use before that place, and no
// loop may lie in between (its kernels would run between the original places).
void merge_sibling_updates(const ir::Function& f, const ir::Block& blk,
                           const std::map<ValueId, const Operation*>& producer,
                           const std::map<ValueId, std::vector<Use>>& uses,
                           const std::map<const Operation*, size_t>& pos,
                           std::map<const Operation*, OpRole>& roles, std::vector<FusionGroup>& groups) {
  auto candidate = is_single_update;
  // The elements a part writes (its value's), or -1 where a dim is a runtime one.
  auto region = [&](const FusionGroup& g) -> int64_t {
    int64_t n = 1;
    for (const ir::Dim& d : f.type(g.root->operands.at(1)).shape) {
      if (!d.is_const()) return -1;
      n *= d.const_value();
    }
    return n;
  };
  // A kernel small enough for a block sequence alone stays so: parts that each fit one (at most
  // kSequenceMaxBlocks blocks of 256 threads) are not merged past that size, or the loop they are
  // in (beam search's scan) could stop running as one sequence. Regions of a runtime size are
  // merged; whether their kernel fits is decided at the binding, as for any kernel.
  constexpr int64_t kFits = kSequenceMaxBlocks * 256;
  auto stays_small = [&](const std::vector<FusionGroup>& parts, const FusionGroup& g) {
    int64_t total = region(g);
    bool small = total >= 0 && total <= kFits;
    for (const FusionGroup& p : parts) {
      const int64_t n = region(p);
      if (n < 0 || total < 0) return true;
      small = small && n <= kFits;
      total += n;
    }
    return !small || total <= kFits;
  };
  Memory memory(producer, roles);
  // Whether g may join `parts` (all before it): neither reads the memory the other updates (an
  // update's result is its operand's memory, so this covers g reading what they write), also
  // through an alias of it.
  auto independent = [&](const std::vector<FusionGroup>& parts, const FusionGroup& g) {
    const ValueId gx = memory.of(g.root->operands[0]);
    for (const FusionGroup& p : parts)
      if (memory.read_by(g, memory.of(p.root->operands[0])) || memory.read_by(p, gx)) return false;
    return true;
  };
  // Whether the parts' outputs are first used after `last` and no loop lies between the first part
  // and `last`.
  auto movable_to = [&](const std::vector<FusionGroup>& parts, const Operation* last) {
    const size_t at = pos.at(last);
    for (size_t i = pos.at(parts.front().root) + 1; i < at; ++i)
      if (blk.ops[i].body) return false;
    for (const FusionGroup& p : parts) {
      auto us = uses.find(p.outputs[0]);
      if (us == uses.end()) continue;
      for (const Use& u : us->second) {
        auto q = pos.find(u.op);  // uses in other blocks: inside loops after `last` (none between)
        if (q != pos.end() && q->second <= at) return false;
      }
    }
    return true;
  };
  std::vector<FusionGroup> out;
  for (size_t i = 0; i < groups.size();) {
    std::vector<FusionGroup> parts = {groups[i]};
    std::vector<ValueId> inputs = groups[i].inputs;  // the parts' together
    size_t j = i + 1;
    if (candidate(groups[i])) {
      for (; j < groups.size() && parts.size() < kMaxSiblingParts; ++j) {
        const FusionGroup& g = groups[j];
        if (!candidate(g) || g.pred != parts[0].pred || !independent(parts, g) ||
            !movable_to(parts, g.root) || !stays_small(parts, g))
          break;
        std::vector<ValueId> more = inputs;
        add_unique(more, g.inputs);
        if (more.size() + parts.size() + 1 > kMaxSiblingBuffers) break;  // inputs + one output each
        inputs = std::move(more);
        parts.push_back(g);
      }
    }
    if (parts.size() < 2) {
      out.push_back(std::move(groups[i]));
      ++i;
      continue;
    }
    // The last part's root is the group's: its place is where the kernel is launched.
    FusionGroup merged;
    merged.root = merged.core = parts.back().root;
    merged.pred = parts[0].pred;
    merged.inputs = std::move(inputs);
    for (const FusionGroup& p : parts) {
      merged.outputs.push_back(p.outputs[0]);
      merged.ops.insert(merged.ops.end(), p.ops.begin(), p.ops.end());
      if (p.root != merged.root) roles[p.root] = OpRole::PartRoot;
    }
    std::sort(merged.ops.begin(), merged.ops.end(),
              [&](const Operation* x, const Operation* y) { return pos.at(x) < pos.at(y); });
    merged.parts = std::move(parts);
    out.push_back(std::move(merged));
    i = j;
  }
  groups = std::move(out);
}

}  // namespace

bool reads_update_region(const Operation& u, const Operation& m) {
  if (m.op != Op::Slice || m.operands.size() + 1 != u.operands.size() || m.operands[0] != u.operands[0])
    return false;
  for (size_t i = 1; i < m.operands.size(); ++i)
    if (m.operands[i] != u.operands[i + 1]) return false;
  if (m.attrs.slices.size() != u.attrs.slices.size()) return false;
  for (size_t d = 0; d < m.attrs.slices.size(); ++d) {
    ir::SliceAxis a = m.attrs.slices[d];
    if (a.dynamic >= 0) a.dynamic += 1;  // the update's operands have its value before the starts
    if (!(a == u.attrs.slices[d])) return false;
  }
  return true;
}

bool is_identity_view(const ir::Function& f, const Operation& op) {
  if (op.op == Op::Reshape) return true;
  if (op.op != Op::Slice) return false;
  const ir::Type& t = f.type(op.operands[0]);
  if (op.attrs.slices.size() != t.rank()) return false;
  for (size_t d = 0; d < t.rank(); ++d) {
    const ir::SliceAxis& s = op.attrs.slices[d];
    if (s.dynamic >= 0 || !s.start.is_const(0) || s.step != 1) return false;
    if (s.squeeze ? !t.shape[d].is_const(1) : s.size != t.shape[d]) return false;
  }
  return true;
}

size_t FusionPlan::num_kernels() const {
  size_t n = 0;
  for (const auto& b : blocks) n += b.groups.size();
  return n;
}

size_t FusionPlan::num_kernels(const ir::Block* blk) const {
  for (const auto& b : blocks)
    if (b.block == blk) return b.groups.size();
  return 0;
}

FusionPlan plan_fusion(const ir::Function& f) {
  FusionPlan plan;
  // Where each value is defined and used, over every block.
  std::map<ValueId, const ir::Block*> def_block;
  std::map<ValueId, const Operation*> producer;
  std::map<ValueId, std::vector<Use>> uses;
  std::set<ValueId> escapes;  // used as a predicate, yielded, or read from another block
  std::map<const Operation*, const ir::Block*> op_block;
  std::vector<const ir::Block*> blocks;
  for (const auto& p : f.params) def_block[p.value] = &f.body;
  std::function<void(const ir::Block&)> index = [&](const ir::Block& b) {
    blocks.push_back(&b);
    for (ValueId v : b.params) def_block[v] = &b;
    for (const auto& op : b.ops) {
      op_block[&op] = &b;
      for (ValueId r : op.results) {
        def_block[r] = &b;
        producer[r] = &op;
      }
    }
    for (const auto& op : b.ops) {
      for (size_t i = 0; i < op.operands.size(); ++i) uses[op.operands[i]].push_back({&op, i});
      if (op.pred != ir::kNoValue) escapes.insert(op.pred);
      if (op.body) index(*op.body);
    }
    for (ValueId y : b.yields) escapes.insert(y);
  };
  index(f.body);
  for (auto& [v, us] : uses)
    for (const Use& u : us)
      if (def_block.count(v) && def_block[v] != op_block[u.op]) escapes.insert(v);

  auto& roles = plan.roles;
  std::map<const Operation*, std::vector<int>> groups_of;  // group indices (within the block)
  auto kernelish = [&](const Operation* op) {
    auto it = roles.find(op);
    if (it == roles.end()) return false;
    OpRole r = it->second;
    return r == OpRole::Root || r == OpRole::Inlined || r == OpRole::Core || r == OpRole::RowPrologue ||
           r == OpRole::AttentionScores;
  };
  auto accepts_inline = [&](const Use& u) {
    if (!kernelish(u.op)) return false;
    if (u.op->op == Op::SliceUpdate && u.slot == 0) return false;
    return true;
  };
  // A matrix product re-reads its A operand once per column tile, so arithmetic inlined there is
  // recomputed many times and keeps A off the tensor-core path's asynchronous copies: only data
  // movement (views, casts) is inlined into A; anything else is materialised by its own kernel,
  // where it usually becomes the epilogue of the product that feeds it.
  // The same holds for the input of a layer or RMS norm computed inside a product (a row
  // prologue): every column tile computes its row statistics and normalised elements again
  // (GPT-2's lm_head: 393 tiles each recomputed the last residual add, element by element, and
  // could not stage A by 16-byte loads); the arithmetic becomes its producer's epilogue instead.
  auto norm_prologue = [&](const Use& u) {
    if (u.slot != 0 || (u.op->op != Op::LayerNorm && u.op->op != Op::RmsNorm)) return false;
    auto r = roles.find(u.op);
    return r != roles.end() && r->second == OpRole::RowPrologue;
  };
  auto inline_into = [&](const Operation* op, const Use& u) {
    if (!accepts_inline(u)) return false;
    bool product_a = ((u.op->op == Op::MatMul || u.op->op == Op::Linear) && u.slot == 0) || norm_prologue(u);
    if (!product_a) return true;
    switch (op->op) {
      case Op::Permute:
      case Op::Expand:
      case Op::Slice:
      case Op::Cast:
      case Op::Concat: return true;
      default: return false;
    }
  };
  auto materializing = [&](ValueId v) {
    if (escapes.count(v)) return true;
    for (const Use& u : uses[v]) {
      auto it = roles.find(u.op);
      if (it == roles.end() || it->second == OpRole::Executor || it->second == OpRole::Alias) return true;
      if (u.op->op == Op::SliceUpdate && u.slot == 0) return true;
    }
    return false;
  };

  // Whether `use` may compute op's value itself: it reads it only where op is defined. An op with no
  // predicate is defined everywhere; one under %p is defined where %p holds, so for a use under the
  // same predicate, and for the taken branch of a select on %p (the form ir/passes/predicated_selects
  // leaves after an `if` branch).
  auto reads_valid = [&](const Operation* op, const Use& u) {
    if (op->pred == ir::kNoValue || u.op->pred == op->pred) return true;
    return u.op->op == Op::Select && u.slot == 1 && u.op->operands[0] == op->pred;
  };
  // A pointwise value of at most kRecomputeMaxElements elements (a loop's scalar bookkeeping: an
  // element picked from a vector, a counter plus one) used by several kernels is recomputed in each
  // of them rather than written by a kernel of its own: a launch costs far more than the few loads
  // and instructions. Its reads move to its users' kernels; scheduler/plan.cpp decides in-place
  // updates from the kernels' reads, so an update between the op and a user is copied, not raced.
  auto recomputable = [&](const Operation* op, bool mat, const std::vector<Use>& us) {
    if (mat || us.size() < 2 || op->results.size() != 1) return false;
    const ir::Type& t = f.type(op->results[0]);
    int64_t n = 1;
    for (const ir::Dim& d : t.shape) {
      if (!d.is_const()) return false;
      n *= d.const_value();
    }
    if (n > kRecomputeMaxElements) return false;
    for (const Use& u : us)
      if (!inline_into(op, u) || !reads_valid(op, u)) return false;
    return true;
  };

  // q @ k^T of a fused attention (fusion.h): `op`'s only use `user` starts an elementwise chain of
  // its shape that ends in the softmax row prologue of group g, whose core p @ v has the scores'
  // batch axes.
  auto attention_scores = [&](const Operation* op, const Operation* user, const FusionGroup& g) {
    if (op->op != Op::MatMul || g.attention_scores || !g.row_prologue || g.row_prologue->op != Op::Softmax ||
        !g.core || g.core->op != Op::MatMul)
      return false;
    const ir::Type& st = f.type(op->results[0]);
    const ir::Type& qt = f.type(op->operands[0]);
    const ir::Type& kt = f.type(op->operands[1]);
    const ir::Type& vt = f.type(g.core->operands[1]);
    const ir::Type& ot = f.type(g.core->results[0]);
    if (!is_float(st.dtype) || qt.rank() < 2 || kt.rank() < 2 || vt.rank() < 2 || ot.rank() != st.rank())
      return false;
    const ir::Dim& queries = st.shape[st.rank() - 2];
    const bool mma = attention_on_tensor_cores(queries);
    const int64_t max_head = mma ? kMaxFusedMmaHeadDim : kMaxFusedHeadDim;
    for (const ir::Dim& d : {qt.shape.back(), vt.shape.back()})
      if (!d.is_const() || d.const_value() < 1 || d.const_value() > max_head) return false;
    if (mma) {
      // Both products on the tensor cores: q, k, v and the probabilities of one 16-bit type.
      const DType t = qt.dtype;
      if ((t != DType::F16 && t != DType::BF16) || kt.dtype != t || vt.dtype != t ||
          f.type(g.row_prologue->results[0]).dtype != t)
        return false;
    }
    for (size_t d = 0; d + 1 < st.rank(); ++d)
      if (ot.shape[d] != st.shape[d]) return false;
    for (const Operation* cur = user; cur != g.row_prologue;) {
      if (!ir::is_elementwise(cur->op) || cur->results.size() != 1 ||
          f.type(cur->results[0]).shape != st.shape || cur->pred != op->pred ||
          escapes.count(cur->results[0]))
        return false;
      const auto& cu = uses[cur->results[0]];
      if (cu.size() != 1) return false;
      cur = cu[0].op;
    }
    return true;
  };

  for (const ir::Block* blk : blocks) {
    BlockPlan bp;
    bp.block = blk;
    std::vector<FusionGroup>& groups = bp.groups;
    std::map<const Operation*, size_t> pos;
    for (size_t i = 0; i < blk->ops.size(); ++i) pos[&blk->ops[i]] = i;

    for (size_t i = blk->ops.size(); i-- > 0;) {
      const Operation* op = &blk->ops[i];
      if (is_executor(op->op)) {
        roles[op] = OpRole::Executor;
        continue;
      }
      ValueId v = op->results.empty() ? ir::kNoValue : op->results[0];
      bool mat = op->results.size() != 1 || materializing(v);
      const std::vector<Use> us = v == ir::kNoValue ? std::vector<Use>{} : uses[v];
      auto new_group = [&]() {
        FusionGroup g;
        g.root = op;
        g.pred = op->pred;
        if (!is_pointwise(op->op)) g.core = op;
        groups.push_back(g);
        groups_of[op] = {static_cast<int>(groups.size() - 1)};
        roles[op] = OpRole::Root;
      };
      // Computed in the kernel of each of its users (a free creator, a recomputed small value).
      auto inline_into_every_user = [&]() {
        roles[op] = OpRole::Inlined;
        std::set<int> gs;
        for (const Use& u : us) gs.insert(groups_of[u.op].begin(), groups_of[u.op].end());
        groups_of[op].assign(gs.begin(), gs.end());
      };
      bool single = us.size() == 1 && !mat;
      const Operation* user = single ? us[0].op : nullptr;

      // (Under the same predicate as its user, or as the chosen operand of a select on its own
      // predicate: a view in an `if` branch feeding the branch's state update, such as a decode
      // step's new key row written to the cache under the loop's `if`.)
      if (op->op == Op::Reshape || (op->op == Op::Slice && is_identity_view(f, *op))) {
        if (single && accepts_inline(us[0]) && reads_valid(op, us[0])) {
          roles[op] = OpRole::Inlined;
          groups_of[op] = groups_of[user];
        } else {
          roles[op] = OpRole::Alias;
        }
        continue;
      }
      if (is_free_creator(op->op)) {
        bool ok = !mat && !us.empty();
        for (const Use& u : us) ok = ok && accepts_inline(u);
        if (ok) {
          inline_into_every_user();
        } else {
          new_group();
        }
        continue;
      }
      if (is_pointwise(op->op)) {
        if (single && inline_into(op, us[0]) && reads_valid(op, us[0])) {
          roles[op] = OpRole::Inlined;
          groups_of[op] = groups_of[user];
        } else if (recomputable(op, mat, us)) {
          inline_into_every_user();
        } else {
          new_group();
        }
        continue;
      }
      // Heavy op: the core of its epilogue's group, a row prologue of a matmul, or a root.
      if (single && user->pred == op->pred && kernelish(user) && groups_of[user].size() == 1) {
        FusionGroup& g = groups[static_cast<size_t>(groups_of[user][0])];
        const ir::Type& vt = f.type(v);
        if (can_be_core(op->op) && g.core == nullptr) {
          // Every op from the user up to the group's root must be elementwise with this shape, so
          // the epilogue is evaluated at exactly the core's output index.
          bool ok = true;
          const Operation* cur = user;
          while (ok) {
            ok = ir::is_elementwise(cur->op) && f.type(cur->results[0]).shape == vt.shape;
            if (cur == g.root) break;
            const auto& cu = uses[cur->results[0]];
            if (cu.size() != 1) {
              ok = false;
              break;
            }
            cur = cu[0].op;
          }
          if (ok) {
            g.core = op;
            roles[op] = OpRole::Core;
            groups_of[op] = groups_of[user];
            continue;
          }
        }
        bool row_norm = op->op == Op::LayerNorm || op->op == Op::RmsNorm ||
                        ((op->op == Op::Softmax || op->op == Op::LogSoftmax) &&
                         op->attrs.axis + 1 == static_cast<int64_t>(vt.rank()));
        if (row_norm && (user->op == Op::MatMul || user->op == Op::Linear) && us[0].slot == 0 &&
            g.core == user && g.row_prologue == nullptr && vt.rank() >= 1) {
          g.row_prologue = op;
          roles[op] = OpRole::RowPrologue;
          groups_of[op] = groups_of[user];
          continue;
        }
        if (attention_scores(op, user, g)) {
          g.attention_scores = op;
          roles[op] = OpRole::AttentionScores;
          groups_of[op] = groups_of[user];
          continue;
        }
      }
      new_group();
    }

    // Stores through a permute (rules in fusion.h): the permute moves from its user's group, where
    // it was a view of the attention's output, to the attention's group as its root.
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      FusionGroup& g = groups[gi];
      if (!g.attention_scores || g.root != g.core || g.core->results.size() != 1) continue;
      const ValueId o = g.core->results[0];
      if (escapes.count(o) || uses[o].size() != 1) continue;
      const Operation* perm = uses[o][0].op;
      if (perm->op != Op::Permute || perm->pred != g.pred || op_block[perm] != blk) continue;
      auto role = roles.find(perm);
      auto in = groups_of.find(perm);
      if (role == roles.end() || role->second != OpRole::Inlined || in == groups_of.end() ||
          in->second.size() != 1)
        continue;
      roles[g.core] = OpRole::Core;
      roles[perm] = OpRole::Root;
      in->second = {static_cast<int>(gi)};
      g.root = perm;
      // A reshape of the now materialised permute (the merged heads' [B, S, H * D]) is its bytes.
      const auto& pu = uses[perm->results[0]];
      auto reshape = pu.size() == 1 && pu[0].op->op == Op::Reshape ? roles.find(pu[0].op) : roles.end();
      if (reshape != roles.end() && reshape->second == OpRole::Inlined) {
        reshape->second = OpRole::Alias;
        groups_of.erase(pu[0].op);
      }
    }

    // Members, inputs and outputs of each group.
    for (auto& [op, gs] : groups_of) {
      if (op_block[op] != blk) continue;
      for (int gi : gs) groups[static_cast<size_t>(gi)].ops.push_back(op);
    }
    for (auto& g : groups) {
      std::sort(g.ops.begin(), g.ops.end(),
                [&](const Operation* a, const Operation* b) { return pos[a] < pos[b]; });
      std::set<const Operation*> members(g.ops.begin(), g.ops.end());
      for (const Operation* op : g.ops) {
        if (op != g.root) {
          for (ValueId r : op->results) plan.inlined.insert(r);
        }
        for (ValueId u : op->operands) {
          auto it = producer.find(u);
          bool internal = it != producer.end() && members.count(it->second) && it->second != g.root;
          if (!internal && std::find(g.inputs.begin(), g.inputs.end(), u) == g.inputs.end())
            g.inputs.push_back(u);
        }
      }
      g.outputs = g.root->results;
    }
    std::sort(groups.begin(), groups.end(),
              [&](const FusionGroup& a, const FusionGroup& b) { return pos[a.root] < pos[b.root]; });
    if (siblings_enabled()) merge_siblings(f, producer, pos, roles, groups);
    if (fold_updates_enabled()) fold_updates(f, *blk, producer, pos, roles, groups);
    if (sibling_updates_enabled()) merge_sibling_updates(f, *blk, producer, uses, pos, roles, groups);
    plan.blocks.push_back(std::move(bp));
  }
  return plan;
}

}  // namespace grape::scheduler
