#include "scheduler/plan.h"

#include <algorithm>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "base/error.h"

namespace grape::scheduler {

const char* storage_kind_name(StorageKind k) {
  switch (k) {
    case StorageKind::Arena: return "arena";
    case StorageKind::Weight: return "weight";
    case StorageKind::State: return "state";
    case StorageKind::DimValue: return "dim";
  }
  return "?";
}

size_t bytes_of(const ir::Type& t, const std::map<std::string, int64_t>& dims) {
  int64_t n = 1;
  for (const auto& d : t.shape) n *= std::max<int64_t>(0, d.eval(dims));
  return static_cast<size_t>(n) * dtype_size(t.dtype);
}

int ExecPlan::storage(ir::ValueId v) const {
  int s = v >= 0 && static_cast<size_t>(v) < storage_of.size() ? storage_of[static_cast<size_t>(v)] : -1;
  if (s < 0) throw Error(ErrorCode::Internal, "plan: value %" + std::to_string(v) + " has no storage");
  return s;
}

namespace {

void print_steps(std::ostringstream& os, const ExecPlan& p, const std::vector<Step>& steps, int depth) {
  std::string pad(static_cast<size_t>(2 * depth + 2), ' ');
  for (const Step& s : steps) {
    switch (s.kind) {
      case Step::Kind::Launch: os << pad << "launch k" << s.index << "\n"; break;
      case Step::Kind::Copy:
        os << pad << "copy s" << s.src << " -> s" << s.dst
           << (s.pred != ir::kNoValue ? " if %" + std::to_string(s.pred) : "") << " (" << s.why << ")\n";
        break;
      case Step::Kind::Loop: {
        const LoopPlan& l = p.loops[s.index];
        os << pad << "loop " << s.index << " while s" << l.init_cond << " / s" << l.cond << " max "
           << l.max_trips << " {\n";
        print_steps(os, p, l.body, depth + 1);
        os << pad << "}\n";
        break;
      }
    }
  }
}

struct Builder {
  const ir::Function& f;
  const FusionPlan& fusion;
  const std::vector<KernelUse>& kernels;
  ExecPlan plan;

  std::unordered_map<const ir::Operation*, size_t> kernel_of_root;
  // The roots of the kernels that compute each op (several for a value recomputed by each user).
  std::unordered_map<const ir::Operation*, std::vector<const ir::Operation*>> owner_roots;
  std::unordered_map<const ir::Operation*, int64_t> pos;
  std::unordered_map<const ir::Block*, int64_t> body_end;
  std::unordered_map<const ir::Block*, const ir::Block*> parent;  // loop body -> enclosing block
  std::vector<const ir::Block*> def_block;
  std::vector<const ir::Operation*> def_op;
  std::vector<int64_t> def_pos, last_use;
  std::vector<std::vector<ir::ValueId>> values_of;  // per storage
  std::map<std::string, int> weight_storage, state_storage;
  std::unordered_map<ir::ValueId, ir::ValueId> update_of;  // in-place output -> the input it updates
  int64_t counter = 0;

  Builder(const ir::Function& fn, const FusionPlan& fp, const std::vector<KernelUse>& ks)
      : f(fn), fusion(fp), kernels(ks) {
    size_t n = f.values.size();
    def_block.assign(n, nullptr);
    def_op.assign(n, nullptr);
    def_pos.assign(n, 0);
    last_use.assign(n, std::numeric_limits<int64_t>::min());
    plan.storage_of.assign(n, -1);
    plan.num_kernels = kernels.size();
    for (const KernelUse& k : kernels) plan.kernel_pred.push_back(k.pred);
    for (size_t k = 0; k < kernels.size(); ++k) {
      kernel_of_root[kernels[k].root] = k;
      for (const ir::Operation* op : kernels[k].ops) owner_roots[op].push_back(kernels[k].root);
      for (const auto& [out, in] : kernels[k].aliases)
        update_of[kernels[k].buffers.at(out)] = kernels[k].buffers.at(in);
    }
  }

  [[noreturn]] void internal(const std::string& what, const ir::Operation* op = nullptr) const {
    std::string at =
        op ? std::string(" (") + ir::op_name(op->op) + " at line " + std::to_string(op->loc.begin.line) + ")"
           : "";
    throw Error(ErrorCode::Internal, "plan: " + what + at);
  }

  size_t idx(ir::ValueId v) const {
    if (v < 0 || static_cast<size_t>(v) >= def_block.size())
      internal("value %" + std::to_string(v) + " out of range");
    return static_cast<size_t>(v);
  }

  void number(const ir::Block& b) {
    for (ir::ValueId p : b.params) def_block[idx(p)] = &b;
    for (const auto& op : b.ops) {
      pos[&op] = counter++;
      for (ir::ValueId r : op.results) {
        def_block[idx(r)] = &b;
        def_op[idx(r)] = &op;
      }
      if (op.body) {
        parent[op.body.get()] = &b;
        number(*op.body);
        body_end[op.body.get()] = counter++;
      }
    }
  }

  // Ops computed inside a kernel read their operands when the kernel runs, at its root: later than
  // the op for its inlined operands and epilogue, earlier for sibling products after the first and
  // for updates folded into a product's epilogue (their operand is then dead from the product on,
  // so the update is done in place).
  // A value recomputed by several kernels is read by the last of them.
  int64_t exec_pos(const ir::Operation& op) const {
    auto it = owner_roots.find(&op);
    int64_t p = -1;
    if (it != owner_roots.end())
      for (const ir::Operation* root : it->second)
        if (pos.count(root)) p = std::max(p, pos.at(root));
    return p >= 0 ? p : pos.at(&op);
  }

  void use(ir::ValueId v, int64_t at, const ir::Block* in) {
    if (v == ir::kNoValue) return;
    size_t i = idx(v);
    // Read inside a loop that does not define it: needed by every trip, so until the loop ends.
    while (in && in != def_block[i]) {
      auto it = parent.find(in);
      if (it == parent.end()) break;
      at = std::max(at, body_end.at(in));
      in = it->second;
    }
    last_use[i] = std::max(last_use[i], at);
  }

  void define(ir::ValueId v, int64_t at) {
    def_pos[idx(v)] = at;
    last_use[idx(v)] = std::max(last_use[idx(v)], at);
  }

  void liveness(const ir::Block& b) {
    for (const auto& op : b.ops) {
      int64_t at = exec_pos(op);
      for (ir::ValueId v : op.operands) use(v, at, &b);
      use(op.pred, at, &b);
      for (ir::ValueId r : op.results) define(r, at);
      if (op.body) {
        for (ir::ValueId p : op.body->params) define(p, at);
        liveness(*op.body);
        for (ir::ValueId y : op.body->yields) use(y, body_end.at(op.body.get()), op.body.get());
      }
    }
  }

  int new_storage(Storage s, ir::ValueId v) {
    plan.storages.push_back(std::move(s));
    values_of.emplace_back();
    int id = static_cast<int>(plan.storages.size() - 1);
    if (v != ir::kNoValue) map(v, id);
    return id;
  }
  int arena(ir::ValueId v, int64_t first, int64_t last) {
    Storage s;
    s.type = f.type(v);
    s.first = first;
    s.last = last;
    return new_storage(std::move(s), v);
  }
  void map(ir::ValueId v, int s) {
    plan.storage_of[idx(v)] = s;
    values_of[static_cast<size_t>(s)].push_back(v);
  }
  int storage(ir::ValueId v, const ir::Operation& op) const {
    int s = plan.storage_of[idx(v)];
    if (s < 0) internal("value %" + std::to_string(v) + " is read but was never materialised", &op);
    return s;
  }

  bool dead_after(int s, int64_t p) const {
    for (ir::ValueId v : values_of[static_cast<size_t>(s)])
      if (last_use[idx(v)] > p) return false;
    return true;
  }

  // Walks back from `v` through views and in-place updates to the value whose bytes it reuses.
  bool derived_in_place(ir::ValueId v, ir::ValueId from) const {
    while (v != from) {
      auto up = update_of.find(v);
      if (up != update_of.end()) {
        v = up->second;
        continue;
      }
      const ir::Operation* d = def_op[idx(v)];
      auto r = d ? fusion.roles.find(d) : fusion.roles.end();
      if (r == fusion.roles.end() || r->second != OpRole::Alias) return false;
      v = d->operands.at(0);
    }
    return true;
  }

  // A state may be updated in place only when the updated value is written back to it, without
  // a predicate and with nothing touching the state in between: otherwise a skipped or missing
  // write would leave the state changed.
  bool written_back(const ir::Block& b, size_t i, ir::ValueId out, const std::string& name) const {
    for (size_t j = i + 1; j < b.ops.size(); ++j) {
      const ir::Operation& o = b.ops[j];
      bool touches = (o.op == ir::Op::StateRead || o.op == ir::Op::StateWrite) && o.attrs.name == name;
      if (o.op == ir::Op::StateWrite && o.attrs.name == name)
        return o.pred == ir::kNoValue && derived_in_place(o.operands.at(0), out);
      if (touches || o.body) return false;
    }
    return false;
  }

  void copy(std::vector<Step>& out, int dst, int src, const ir::Operation& op, const char* why,
            ir::ValueId pred = ir::kNoValue) {
    if (dst == src) return;
    Step s;
    s.kind = Step::Kind::Copy;
    s.dst = dst;
    s.src = src;
    s.pred = pred;
    s.op = &op;
    s.why = why;
    out.push_back(s);
  }

  void launch(size_t k, const ir::Block& b, size_t i, std::vector<Step>& out) {
    const KernelUse& ku = kernels[k];
    const ir::Operation& op = b.ops[i];
    int64_t p = pos.at(&op);
    for (size_t j = 0; j < ku.num_inputs; ++j) storage(ku.buffers[j], op);
    if (ku.pred != ir::kNoValue) storage(ku.pred, op);
    for (size_t j = ku.num_inputs; j < ku.buffers.size(); ++j) {
      ir::ValueId v = ku.buffers[j];
      auto alias =
          std::find_if(ku.aliases.begin(), ku.aliases.end(), [&](const auto& a) { return a.first == j; });
      if (alias == ku.aliases.end()) {
        arena(v, p, p);
        continue;
      }
      ir::ValueId in = ku.buffers.at(alias->second);
      int s = storage(in, op);
      const Storage& st = plan.storages[static_cast<size_t>(s)];
      bool in_place = false;
      if (st.kind == StorageKind::Arena)
        in_place = dead_after(s, p);
      else if (st.kind == StorageKind::State)
        in_place = dead_after(s, p) && written_back(b, i, v, st.name);
      if (in_place) {
        map(v, s);
      } else {
        int t = arena(v, p, p);
        copy(out, t, s, op, "a copy before an in-place update");
      }
    }
    Step s;
    s.kind = Step::Kind::Launch;
    s.index = k;
    s.op = &op;
    out.push_back(s);
  }

  int named(std::map<std::string, int>& table, StorageKind kind, const std::string& name, ir::ValueId v) {
    auto it = table.find(name);
    if (it != table.end()) {
      map(v, it->second);
      return it->second;
    }
    Storage s;
    s.kind = kind;
    s.name = name;
    s.type = f.type(v);
    return table[name] = new_storage(std::move(s), v);
  }

  void loop(const ir::Operation& op, std::vector<Step>& out) {
    const ir::Block& body = *op.body;
    size_t n = body.params.size();
    if (body.yields.size() != n + 1 || op.operands.size() != n + 1 || op.results.size() != n)
      internal("a loop's operands, carried values and yields do not match", &op);
    LoopPlan l;
    l.op = &op;
    l.max_trips = op.attrs.max_trips;
    l.begin = pos.at(&op);
    l.end = body_end.at(&body);
    l.init_cond = storage(op.operands[0], op);
    for (size_t i = 0; i < n; ++i) {
      // The carried values live in storages of their own: a yield's storage is rewritten by the
      // next trip.
      int c = arena(body.params[i], l.begin, l.end);
      l.carried.push_back(c);
      // A value computed under a predicate (an op of a branch, read by a loop inside that branch)
      // is undefined where the predicate is false, and so is the loop's result then: copy it
      // under the same predicate, or the copy reads memory nothing wrote (compute-sanitizer
      // initcheck, tests/difftest/cases/helpers_nested_predicated.grp).
      const ir::Operation* d = def_op[idx(op.operands[i + 1])];
      copy(out, c, storage(op.operands[i + 1], op), op, "a loop's initial value", d ? d->pred : ir::kNoValue);
    }
    build(body, l.body);
    // Yields that are another slot's carried storage (a swap) or the condition when it is carried
    // go through temporaries first, so that no copy reads a storage an earlier copy rewrote.
    auto carried_slot = [&](int s) {
      auto it = std::find(l.carried.begin(), l.carried.end(), s);
      return it == l.carried.end() ? -1 : static_cast<int>(it - l.carried.begin());
    };
    std::vector<int> src(n);
    for (size_t i = 0; i < n; ++i) {
      src[i] = storage(body.yields[i + 1], op);
      int slot = carried_slot(src[i]);
      if (slot >= 0 && static_cast<size_t>(slot) != i) {
        int t = arena(body.yields[i + 1], l.end, l.end);
        copy(l.body, t, src[i], op, "a swapped loop-carried value");
        src[i] = t;
      }
    }
    l.cond = storage(body.yields[0], op);
    int cond_slot = carried_slot(l.cond);
    if (cond_slot >= 0 && src[static_cast<size_t>(cond_slot)] != l.cond) {
      int t = arena(body.yields[0], l.end, l.end);
      copy(l.body, t, l.cond, op, "a carried loop condition");
      l.cond = t;
    }
    for (size_t i = 0; i < n; ++i) copy(l.body, l.carried[i], src[i], op, "a loop-carried value");
    for (size_t i = 0; i < n; ++i) map(op.results[i], l.carried[i]);
    plan.loops.push_back(std::move(l));
    Step s;
    s.kind = Step::Kind::Loop;
    s.index = plan.loops.size() - 1;
    s.op = &op;
    out.push_back(s);
  }

  void executor_op(const ir::Operation& op, std::vector<Step>& out) {
    switch (op.op) {
      case ir::Op::Param: {
        size_t i = static_cast<size_t>(op.attrs.index);
        if (i >= plan.inputs.size()) internal("a parameter index out of range", &op);
        if (plan.storage_of[idx(op.results.at(0))] < 0) map(op.results[0], plan.inputs[i]);
        return;
      }
      case ir::Op::Weight:
        named(weight_storage, StorageKind::Weight, op.attrs.name, op.results.at(0));
        return;
      case ir::Op::StateRead:
        named(state_storage, StorageKind::State, op.attrs.name, op.results.at(0));
        return;
      case ir::Op::StateWrite: {
        int src = storage(op.operands.at(0), op);
        auto it = state_storage.find(op.attrs.name);
        int dst = it != state_storage.end() ? it->second : -1;
        if (dst < 0) {  // written before (or without) being read
          Storage s;
          s.kind = StorageKind::State;
          s.name = op.attrs.name;
          s.type = f.type(op.operands[0]);
          dst = state_storage[op.attrs.name] = new_storage(std::move(s), ir::kNoValue);
        }
        copy(out, dst, src, op, "a state update", op.pred);
        return;
      }
      case ir::Op::DimValue: {
        Storage s;
        s.kind = StorageKind::DimValue;
        s.type = f.type(op.results.at(0));
        s.dim = op.attrs.shape.at(0);
        new_storage(std::move(s), op.results[0]);
        return;
      }
      case ir::Op::Loop: loop(op, out); return;
      default: internal("no executor handling", &op);
    }
  }

  void build(const ir::Block& b, std::vector<Step>& out) {
    for (size_t i = 0; i < b.ops.size(); ++i) {
      const ir::Operation& op = b.ops[i];
      auto k = kernel_of_root.find(&op);
      if (k != kernel_of_root.end()) {
        launch(k->second, b, i, out);
        continue;
      }
      auto r = fusion.roles.find(&op);
      OpRole role = r == fusion.roles.end() ? OpRole::Executor : r->second;
      switch (role) {
        case OpRole::Alias: map(op.results.at(0), storage(op.operands.at(0), op)); break;
        case OpRole::Executor: executor_op(op, out); break;
        case OpRole::Root: internal("a kernel root without a kernel", &op);
        case OpRole::Inlined:
        case OpRole::Core:
        case OpRole::RowPrologue:
        case OpRole::AttentionScores:
        case OpRole::PartRoot: break;  // its kernel is launched at a sibling's place
      }
    }
  }

  // Each arena storage lives from its first definition to the last use of any value it holds.
  void intervals() {
    for (size_t s = 0; s < plan.storages.size(); ++s) {
      Storage& st = plan.storages[s];
      for (ir::ValueId v : values_of[s]) {
        st.first = std::min(st.first, def_pos[idx(v)]);
        st.last = std::max(st.last, last_use[idx(v)]);
      }
    }
  }

  ExecPlan run() {
    number(f.body);
    plan.end = counter + 1;
    for (const auto& p : f.params) define(p.value, 0);
    liveness(f.body);
    for (ir::ValueId y : f.body.yields) use(y, counter, &f.body);
    for (size_t i = 0; i < f.params.size(); ++i) {
      int s = arena(f.params[i].value, 0, 0);
      plan.storages[static_cast<size_t>(s)].input = static_cast<int>(i);
      plan.inputs.push_back(s);
    }
    build(f.body, plan.steps);
    for (ir::ValueId y : f.body.yields) plan.outputs.push_back(plan.storage(y));
    intervals();
    plan.first_state_write = plan.steps.size();
    for (size_t i = 0; i < plan.steps.size() && plan.first_state_write == plan.steps.size(); ++i)
      if (writes_state(plan.steps[i])) plan.first_state_write = i;
    return std::move(plan);
  }

  // True if the step (a loop: a step of its body) writes a state's storage: a copy into it, or a
  // kernel updating it in place.
  bool writes_state(const Step& s) const {
    auto is_state = [&](int st) {
      return st >= 0 && plan.storages[static_cast<size_t>(st)].kind == StorageKind::State;
    };
    switch (s.kind) {
      case Step::Kind::Copy: return is_state(s.dst);
      case Step::Kind::Launch: {
        const KernelUse& ku = kernels[s.index];
        for (size_t j = ku.num_inputs; j < ku.buffers.size(); ++j)
          if (is_state(plan.storage_of[idx(ku.buffers[j])])) return true;
        return false;
      }
      case Step::Kind::Loop:
        for (const Step& b : plan.loops[s.index].body)
          if (writes_state(b)) return true;
        return false;
    }
    return false;
  }
};

}  // namespace

std::string ExecPlan::str() const {
  std::ostringstream os;
  os << "steps:\n";
  print_steps(os, *this, steps, 0);
  os << "storages:\n";
  for (size_t s = 0; s < storages.size(); ++s) {
    const Storage& st = storages[s];
    os << "  s" << s << " " << storage_kind_name(st.kind) << " " << st.type.str();
    if (!st.name.empty()) os << " " << st.name;
    if (st.kind == StorageKind::Arena) os << " [" << st.first << ", " << st.last << "]";
    if (st.input >= 0) os << " input " << st.input;
    os << "\n";
  }
  return os.str();
}

ir::ValueId ExecPlan::step_pred(const Step& s) const {
  switch (s.kind) {
    case Step::Kind::Launch: return kernel_pred.at(s.index);
    case Step::Kind::Copy: return s.pred;
    case Step::Kind::Loop: return ir::kNoValue;
  }
  return ir::kNoValue;
}

std::vector<PredicatedRegion> ExecPlan::predicated_regions(const std::vector<Step>& list, size_t begin,
                                                           size_t end, size_t min_steps) const {
  std::vector<PredicatedRegion> out;
  end = std::min(end, list.size());
  for (size_t i = begin; i < end;) {
    const ir::ValueId p = step_pred(list[i]);
    size_t j = i + 1;
    if (p != ir::kNoValue)
      while (j < end && step_pred(list[j]) == p) ++j;
    if (p != ir::kNoValue && j - i >= std::max<size_t>(1, min_steps)) out.push_back({i, j, p});
    i = j;
  }
  return out;
}

ExecPlan build_plan(const ir::Function& f, const FusionPlan& fusion, const std::vector<KernelUse>& kernels) {
  return Builder(f, fusion, kernels).run();
}

}  // namespace grape::scheduler
