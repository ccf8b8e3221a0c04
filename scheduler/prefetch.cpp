#include "scheduler/prefetch.h"

#include "scheduler/launch.h"

namespace grape::scheduler {

PrefetchMode prefetch_mode() {
  static const PrefetchMode m = static_cast<PrefetchMode>(env_knob("GRAPE_PREFETCH", 0, 1, 1));
  return m;
}

namespace {

void plan_list(const std::vector<Step>& steps, bool loop_body, const std::vector<bool>& target,
               std::vector<int>& out) {
  std::vector<int> targets;
  for (const Step& s : steps)
    if (s.kind == Step::Kind::Launch && target.at(s.index)) targets.push_back(static_cast<int>(s.index));
  if (targets.empty()) return;
  for (size_t i = 0; i + 1 < targets.size(); ++i) out[static_cast<size_t>(targets[i])] = targets[i + 1];
  if (loop_body && targets.size() > 1) out[static_cast<size_t>(targets.back())] = targets.front();
}

}  // namespace

std::vector<int> plan_prefetches(const ExecPlan& plan, const std::vector<bool>& target, PrefetchMode mode) {
  std::vector<int> out(plan.num_kernels, -1);
  if (mode == PrefetchMode::None) return out;
  plan_list(plan.steps, false, target, out);
  for (const LoopPlan& l : plan.loops) plan_list(l.body, true, target, out);
  return out;
}

}  // namespace grape::scheduler
