#include "scheduler/prefetch.h"

#include "scheduler/launch.h"

namespace grape::scheduler {

PrefetchMode prefetch_mode() {
  static const PrefetchMode m = static_cast<PrefetchMode>(env_knob("GRAPE_PREFETCH", 0, 2, 2));
  return m;
}

namespace {

void plan_list(const std::vector<Step>& steps, bool loop_body, const std::vector<bool>& target,
               std::vector<int>& out) {
  std::vector<int> kernels, targets;
  for (const Step& s : steps) {
    if (s.kind != Step::Kind::Launch) continue;
    const int k = static_cast<int>(s.index);
    kernels.push_back(k);
    if (target.at(s.index)) targets.push_back(k);
  }
  if (targets.empty()) return;
  if (kernels.front() != targets.front()) out[static_cast<size_t>(kernels.front())] = targets.front();
  for (size_t i = 0; i + 1 < targets.size(); ++i) out[static_cast<size_t>(targets[i])] = targets[i + 1];
  if (loop_body && targets.size() > 1) out[static_cast<size_t>(targets.back())] = targets.front();
}

}  // namespace

std::vector<int> plan_prefetches(const ExecPlan& plan, const std::vector<bool>& target, PrefetchMode mode) {
  std::vector<int> out(plan.num_kernels, -1);
  if (mode == PrefetchMode::None) return out;
  if (mode == PrefetchMode::Own) {
    for (size_t k = 0; k < plan.num_kernels; ++k)
      if (target.at(k)) out[k] = static_cast<int>(k);
    return out;
  }
  plan_list(plan.steps, false, target, out);
  for (const LoopPlan& l : plan.loops) plan_list(l.body, true, target, out);
  return out;
}

}  // namespace grape::scheduler
