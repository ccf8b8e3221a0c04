#include "scheduler/sequence.h"

#include <cstdlib>
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

}  // namespace grape::scheduler
