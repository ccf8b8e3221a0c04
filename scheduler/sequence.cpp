#include "scheduler/sequence.h"

#include <cstdlib>
#include <string>

#include "scheduler/launch.h"

namespace grape::scheduler {

bool fits_block_sequence(const LaunchRule& rule) {
  if (rule.threads != 256) return false;
  const bool kind_fits = rule.kind == LaunchRule::Elementwise || rule.kind == LaunchRule::Single ||
                         (rule.kind == LaunchRule::Rows && rule.topk_k == 0);
  if (!kind_fits) return false;
  for (const ir::Dim& d : rule.items)
    if (!d.is_const()) return false;
  // Constant work: the launch is the same for every binding and device.
  const LaunchDims d = launch_dims(rule, {}, 1, false);
  return d.grid <= kSequenceMaxBlocks && d.shared_bytes == 0 && d.scratch_bytes == 0 && d.splits <= 1;
}

bool block_sequences_enabled() {
  const char* v = std::getenv("GRAPE_SEQUENCES");
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
  const std::vector<bool>& kernel_fits;
  std::vector<BlockSequence> out;

  bool copy_fits(const Step& s) const {
    const ir::Type& t = plan.storages.at(static_cast<size_t>(s.dst)).type;
    for (const ir::Dim& d : t.shape)
      if (!d.is_const()) return false;
    return bytes_of(t, {}) <= kSequenceMaxCopyBytes;
  }

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

  bool fits(const Step& s) const {
    switch (s.kind) {
      case Step::Kind::Launch: return s.index < kernel_fits.size() && kernel_fits[s.index];
      case Step::Kind::Copy: return copy_fits(s);
      case Step::Kind::Loop: {
        const LoopPlan& l = plan.loops[s.index];
        if (l.max_trips < 0) return false;
        for (const Step& b : l.body)
          if (!fits(b)) return false;
        Counts c;
        count(s, c);
        return c.within_limits();
      }
    }
    return false;
  }

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
      size_t j = i;
      while (j < list.size() && (j == i || j != barrier) && fits(list[j]) &&
             plan.step_pred(list[j]) == pred) {
        Counts more = c;
        count(list[j], more);
        if (!more.within_limits()) break;
        c = more;
        ++j;
      }
      if (j - i >= 2 || list[i].kind == Step::Kind::Loop) {
        BlockSequence q;
        q.list = &list;
        q.begin = i;
        q.end = j;
        q.pred = pred;
        for (size_t k = i; k < j; ++k) slots(list[k], q);
        out.push_back(std::move(q));
      }
      i = j;
    }
  }
};

}  // namespace

std::vector<BlockSequence> plan_block_sequences(const ExecPlan& plan, const std::vector<bool>& kernel_fits) {
  Former f{plan, kernel_fits, {}};
  f.form(plan.steps, plan.first_state_write);
  return std::move(f.out);
}

}  // namespace grape::scheduler
