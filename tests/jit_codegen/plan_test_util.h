// A function's fusion plan, kernels and execution plan, built as the executors build them (no
// GPU): for the plan and block-sequence tests.
#pragma once
#include <vector>

#include "jit/codegen.h"
#include "scheduler/fusion.h"
#include "scheduler/plan.h"

namespace grape::codegen_test {

struct Planned {
  scheduler::FusionPlan fusion;
  std::vector<jit::KernelSpec> specs;
  scheduler::ExecPlan plan;
};

inline Planned plan_of(const ir::Function& f) {
  Planned p;
  p.fusion = scheduler::plan_fusion(f);
  p.specs = jit::emit_kernels(f, p.fusion, f.name);
  std::vector<scheduler::KernelUse> uses;
  for (const auto& s : p.specs) uses.push_back({s.root, s.ops, s.buffers, s.num_inputs, s.aliases, s.pred});
  p.plan = scheduler::build_plan(f, p.fusion, uses);
  return p;
}

}  // namespace grape::codegen_test
