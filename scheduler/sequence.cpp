#include "scheduler/sequence.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <string>

#include "scheduler/launch.h"

namespace grape::scheduler {

bool fits_block_sequence(const LaunchRule& rule) {
  if (rule.threads != 128 && rule.threads != 256) return false;
  return rule.kind == LaunchRule::Elementwise || rule.kind == LaunchRule::Single ||
         (rule.kind == LaunchRule::Rows && rule.topk_k == 0);
}

bool small_for_block_sequence(const LaunchRule& rule, const std::map<std::string, int64_t>& dims) {
  if (!fits_block_sequence(rule)) return false;
  const LaunchDims d = launch_dims(rule, dims, 1, false);
  return d.grid <= kSequenceMaxBlocks && d.shared_bytes == 0 && d.scratch_bytes == 0 && d.splits <= 1;
}

bool sequence_small_enough(const ExecPlan& plan, const BlockSequence& s,
                           const std::vector<LaunchRule>& kernels,
                           const std::map<std::string, int64_t>& dims) {
  for (size_t k : s.kernels)
    if (!small_for_block_sequence(kernels.at(k), dims)) return false;
  for (const Step* c : s.copies)
    if (bytes_of(plan.storages.at(static_cast<size_t>(c->dst)).type, dims) > kSequenceMaxCopyBytes)
      return false;
  return true;
}

bool block_sequences_enabled() {
  const char* v = std::getenv("GRAPE_SEQUENCES");
  return !(v && std::string(v) == "0");
}

bool sequence_locals_enabled() {
  const char* v = std::getenv("GRAPE_SEQUENCE_LOCALS");
  return !(v && std::string(v) == "0");
}

namespace {

struct Counts {
  size_t kernels = 0, copies = 0, loops = 0;
  bool within_limits() const {
    return kernels <= kSequenceMaxKernels && copies <= kSequenceMaxCopies && loops <= kSequenceMaxLoops;
  }
};

struct Former {
  const ExecPlan& plan;
  const std::vector<int>& kernel_threads;
  std::vector<BlockSequence> out;

  void count(const Step& s, Counts& c) const {
    switch (s.kind) {
      case Step::Kind::Launch: ++c.kernels; break;
      case Step::Kind::Copy: ++c.copies; break;
      case Step::Kind::Loop:
        ++c.loops;
        for (const Step& b : plan.loops[s.index].body) count(b, c);
        break;
    }
  }

  // The block size a step needs (0: any, a copy), or -1 when it does not fit.
  int threads(const Step& s) const {
    switch (s.kind) {
      case Step::Kind::Launch: {
        const int t = s.index < kernel_threads.size() ? kernel_threads[s.index] : 0;
        return t > 0 ? t : -1;
      }
      case Step::Kind::Copy: return 0;
      case Step::Kind::Loop: {
        const LoopPlan& l = plan.loops[s.index];
        if (l.max_trips < 0) return -1;
        int t = 0;
        for (const Step& b : l.body) {
          const int bt = threads(b);
          if (bt < 0 || (bt > 0 && t > 0 && bt != t)) return -1;
          if (bt > 0) t = bt;
        }
        Counts c;
        count(s, c);
        return c.within_limits() ? t : -1;
      }
    }
    return -1;
  }

  bool fits(const Step& s) const { return threads(s) >= 0; }

  void slots(const Step& s, BlockSequence& q) const {
    switch (s.kind) {
      case Step::Kind::Launch: q.kernels.push_back(s.index); break;
      case Step::Kind::Copy: q.copies.push_back(&s); break;
      case Step::Kind::Loop:
        q.loops.push_back(s.index);
        for (const Step& b : plan.loops[s.index].body) slots(b, q);
        break;
    }
  }

  // `barrier`: no sequence holds both step barrier - 1 and step barrier.
  void form(const std::vector<Step>& list, size_t barrier) {
    for (size_t i = 0; i < list.size();) {
      if (!fits(list[i])) {
        if (list[i].kind == Step::Kind::Loop) form(plan.loops[list[i].index].body, SIZE_MAX);
        ++i;
        continue;
      }
      const ir::ValueId pred = plan.step_pred(list[i]);
      Counts c;
      int block = 0;  // the sequence's block size, once a kernel decides it
      size_t j = i;
      while (j < list.size() && (j == i || j != barrier) && fits(list[j]) &&
             plan.step_pred(list[j]) == pred) {
        const int t = threads(list[j]);
        if (t > 0 && block > 0 && t != block) break;
        Counts more = c;
        count(list[j], more);
        if (!more.within_limits()) break;
        c = more;
        if (t > 0) block = t;
        ++j;
      }
      if (j - i >= 2 || list[i].kind == Step::Kind::Loop) {
        BlockSequence q;
        q.list = &list;
        q.begin = i;
        q.end = j;
        q.pred = pred;
        q.threads = block > 0 ? block : 256;
        for (size_t k = i; k < j; ++k) slots(list[k], q);
        out.push_back(std::move(q));
      }
      i = j;
    }
  }
};

}  // namespace

std::vector<BlockSequence> plan_block_sequences(const ExecPlan& plan,
                                                const std::vector<int>& kernel_threads) {
  Former f{plan, kernel_threads, {}};
  f.form(plan.steps, plan.first_state_write);
  return std::move(f.out);
}

namespace {

// Uses of storages by steps: every reference of a Launch (its kernel's buffers and predicate), a
// Copy (dst, src, predicate) or a Loop (its conditions and carried storages, then its body).
struct Uses {
  const ExecPlan& plan;
  const std::vector<std::vector<int>>& kernel_storages;

  template <class F>
  void of(const Step& s, const F& f) const {
    switch (s.kind) {
      case Step::Kind::Launch:
        if (s.index < kernel_storages.size())
          for (int st : kernel_storages[s.index]) f(st);
        break;
      case Step::Kind::Copy:
        f(s.dst);
        f(s.src);
        if (s.pred != ir::kNoValue) f(plan.storage(s.pred));
        break;
      case Step::Kind::Loop: {
        const LoopPlan& l = plan.loops[s.index];
        f(l.init_cond);
        f(l.cond);
        for (int c : l.carried) f(c);
        break;
      }
    }
  }
  // Every use in `list` and the loop bodies under it.
  template <class F>
  void all(const std::vector<Step>& list, const F& f) const {
    for (const Step& s : list) {
      of(s, f);
      if (s.kind == Step::Kind::Loop) all(plan.loops[s.index].body, f);
    }
  }
};

}  // namespace

std::vector<SequenceLocal> sequence_locals(const ExecPlan& plan, const BlockSequence& s,
                                           const std::vector<std::vector<int>>& kernel_storages) {
  const Uses uses{plan, kernel_storages};
  std::vector<size_t> total(plan.storages.size(), 0), inside(plan.storages.size(), 0);
  auto count = [](std::vector<size_t>& n) {
    return [&n](int st) {
      if (st >= 0 && static_cast<size_t>(st) < n.size()) ++n[static_cast<size_t>(st)];
    };
  };
  uses.all(plan.steps, count(total));
  // Inside: steps [begin, end) of the sequence's list, numbered in the order they run, loop
  // bodies flattened. Every use within one of these steps (a loop's body included) spans the
  // step's whole range: a value a loop's body writes may be read in its next trip.
  std::function<size_t(const Step&)> flat_size = [&](const Step& st) -> size_t {
    if (st.kind != Step::Kind::Loop) return 1;
    size_t n = 1;
    for (const Step& b : plan.loops[st.index].body) n += flat_size(b);
    return n;
  };
  std::vector<std::pair<size_t, size_t>> span(plan.storages.size(), {SIZE_MAX, 0});
  size_t at = 0;
  for (size_t i = s.begin; i < s.end; ++i) {
    const Step& st = (*s.list)[i];
    const size_t n = flat_size(st);
    auto use = [&](int x) {
      if (x < 0 || static_cast<size_t>(x) >= span.size()) return;
      auto& sp = span[static_cast<size_t>(x)];
      sp.first = std::min(sp.first, at);
      sp.second = std::max(sp.second, at + n - 1);
      ++inside[static_cast<size_t>(x)];
    };
    uses.of(st, use);
    if (st.kind == Step::Kind::Loop) uses.all(plan.loops[st.index].body, use);
    at += n;
  }

  std::vector<bool> result(plan.storages.size(), false);
  for (int o : plan.outputs)
    if (o >= 0) result[static_cast<size_t>(o)] = true;
  std::vector<SequenceLocal> out;
  for (size_t st = 0; st < plan.storages.size(); ++st) {
    const Storage& g = plan.storages[st];
    if (g.kind != StorageKind::Arena || g.input >= 0 || result[st] || inside[st] == 0 ||
        inside[st] != total[st])
      continue;
    out.push_back({static_cast<int>(st), span[st].first, span[st].second});
  }
  std::sort(out.begin(), out.end(), [](const SequenceLocal& a, const SequenceLocal& b) {
    return a.first != b.first ? a.first < b.first : a.storage < b.storage;
  });
  return out;
}

std::vector<size_t> place_sequence_locals(const std::vector<SequenceLocal>& locals,
                                          const std::vector<size_t>& bytes, size_t budget, size_t* total) {
  struct Placed {
    size_t first, last, offset, size;
  };
  std::vector<Placed> placed;
  std::vector<size_t> offset(locals.size(), SIZE_MAX);
  size_t high = 0;
  for (size_t i = 0; i < locals.size(); ++i) {
    const size_t size = (bytes.at(i) + 15) / 16 * 16;
    if (size == 0) continue;
    // The lowest offset clear of every placed local whose interval overlaps this one.
    std::vector<std::pair<size_t, size_t>> busy;
    for (const Placed& p : placed)
      if (p.first <= locals[i].last && locals[i].first <= p.last)
        busy.push_back({p.offset, p.offset + p.size});
    std::sort(busy.begin(), busy.end());
    size_t at = 0;
    for (const auto& [b, e] : busy) {
      if (at + size <= b) break;
      at = std::max(at, e);
    }
    if (at + size > budget) continue;
    offset[i] = at;
    placed.push_back({locals[i].first, locals[i].last, at, size});
    high = std::max(high, at + size);
  }
  if (total) *total = high;
  return offset;
}

}  // namespace grape::scheduler
