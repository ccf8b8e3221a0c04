// The execution plan and its arena (scheduler/plan.h, scheduler/arena.h), on the CPU: every
// kernel launched exactly once in the step tree, loops nested, storages of live values never
// overlapping in the arena, in-place state updates without copies. No GPU needed.
#include "scheduler/plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "frontend/compile.h"
#include "jit/codegen.h"
#include "scheduler/arena.h"
#include "scheduler/fusion.h"
#include "scheduler/prefetch.h"
#include "tests/jit_codegen/codegen_test_util.h"
#include "tests/jit_codegen/plan_test_util.h"
#include "tests/jit_codegen/two_states_program.h"

namespace grape {
namespace {

namespace fs = std::filesystem;

using namespace codegen_test;

void for_each_step(const scheduler::ExecPlan& p, const std::vector<scheduler::Step>& steps, int depth,
                   const std::function<void(const scheduler::Step&, int)>& fn) {
  for (const auto& s : steps) {
    fn(s, depth);
    if (s.kind == scheduler::Step::Kind::Loop) for_each_step(p, p.loops[s.index].body, depth + 1, fn);
  }
}

// The invariants every plan must satisfy, with every symbol bound to `value`.
void check_plan(const ir::Function& f, const Planned& pl, int64_t value, const std::string& what) {
  const scheduler::ExecPlan& p = pl.plan;
  std::vector<int> launched(p.num_kernels, 0);
  for_each_step(p, p.steps, 0, [&](const scheduler::Step& s, int) {
    if (s.kind == scheduler::Step::Kind::Launch) ++launched.at(s.index);
    if (s.kind == scheduler::Step::Kind::Copy) {
      EXPECT_GE(s.dst, 0) << what;
      EXPECT_GE(s.src, 0) << what;
      EXPECT_NE(s.dst, s.src) << what;
    }
  });
  for (size_t k = 0; k < launched.size(); ++k) EXPECT_EQ(launched[k], 1) << what << ": kernel " << k;
  // A copy never reads what a skipped kernel did not write: when the last kernel before it (in
  // its step list) that writes its source is predicated, the copy has the same predicate. (A
  // loop's initial value computed in a branch was copied unconditionally: compute-sanitizer
  // initcheck, tests/difftest/cases/helpers_nested_predicated.grp.) An output updated in place
  // keeps its earlier writer's contents where the kernel is skipped (an update folded into a
  // predicated product's epilogue: scheduler/fusion.h), so it does not count as a write.
  std::function<void(const std::vector<scheduler::Step>&)> copies_of_predicated = [&](const auto& list) {
    std::map<int, ir::ValueId> writer_pred;  // storage -> predicate of its last writer so far
    for (const scheduler::Step& s : list) {
      if (s.kind == scheduler::Step::Kind::Copy) {
        if (s.pred != ir::kNoValue) {  // an executor reads the predicate from its storage
          EXPECT_GE(p.storage_of.at(static_cast<size_t>(s.pred)), 0)
              << what << ": a copy's predicate %" << s.pred;
        }
        auto w = writer_pred.find(s.src);
        if (w != writer_pred.end() && w->second != ir::kNoValue) {
          EXPECT_EQ(s.pred, w->second) << what << ": copy s" << s.src << " -> s" << s.dst << " (" << s.why
                                       << ") reads what a predicated kernel wrote\n"
                                       << p.str();
        }
        writer_pred[s.dst] = s.pred;
      } else if (s.kind == scheduler::Step::Kind::Launch) {
        const jit::KernelSpec& k = pl.specs.at(s.index);
        auto storage = [&](size_t b) { return p.storage_of.at(static_cast<size_t>(k.buffers.at(b))); };
        for (size_t b = k.num_inputs; b < k.buffers.size(); ++b) {
          bool in_place = false;
          for (const auto& [out, in] : k.aliases)
            in_place = in_place || (out == b && storage(in) == storage(b));
          if (!in_place) writer_pred[storage(b)] = k.pred;
        }
      } else {
        copies_of_predicated(p.loops[s.index].body);
        writer_pred.clear();  // a loop may have written anything
      }
    }
  };
  copies_of_predicated(p.steps);
  for (const auto& spec : pl.specs)
    for (ir::ValueId v : spec.buffers)
      EXPECT_GE(p.storage_of.at(static_cast<size_t>(v)), 0) << what << " %" << v;
  EXPECT_EQ(p.inputs.size(), f.params.size()) << what;
  EXPECT_EQ(p.outputs.size(), f.body.yields.size()) << what;
  for (const auto& l : p.loops) {
    for (int c : l.carried) {
      EXPECT_LE(p.storages[static_cast<size_t>(c)].first, l.begin) << what;
      EXPECT_GE(p.storages[static_cast<size_t>(c)].last, l.end) << what;
    }
  }

  std::map<std::string, int64_t> dims;
  for (const auto& s : f.symbols) dims[s] = value;
  scheduler::ArenaLayout a = scheduler::plan_arena(p, dims);
  for (size_t i = 0; i < p.storages.size(); ++i) {
    const auto& si = p.storages[i];
    if (si.kind != scheduler::StorageKind::Arena) {
      EXPECT_EQ(a.offset[i], scheduler::kNotInArena);
      continue;
    }
    size_t bi = std::max<size_t>(1, scheduler::bytes_of(si.type, dims));
    EXPECT_EQ(a.offset[i] % scheduler::kArenaAlignment, 0u);
    EXPECT_LE(a.offset[i] + bi, a.size) << what;
    for (size_t j = i + 1; j < p.storages.size(); ++j) {
      const auto& sj = p.storages[j];
      if (sj.kind != scheduler::StorageKind::Arena) continue;
      if (si.last < sj.first || sj.last < si.first) continue;  // never live at once
      size_t bj = std::max<size_t>(1, scheduler::bytes_of(sj.type, dims));
      bool disjoint = a.offset[i] + bi <= a.offset[j] || a.offset[j] + bj <= a.offset[i];
      EXPECT_TRUE(disjoint) << what << ": s" << i << " and s" << j << " are live together and overlap\n"
                            << p.str();
    }
  }
}

TEST(Arena, DisjointLifetimesShareMemoryOverlappingOnesDoNot) {
  // a [0,1], b [2,3] never live together; c [1,2] overlaps both.
  std::vector<scheduler::ArenaRequest> r = {{1000, 0, 1}, {1000, 2, 3}, {512, 1, 2}};
  scheduler::ArenaLayout a = scheduler::assign_offsets(r);
  EXPECT_EQ(a.offset[0], a.offset[1]);
  EXPECT_TRUE(a.offset[2] >= a.offset[0] + 1024 || a.offset[2] + 512 <= a.offset[0]);
  EXPECT_EQ(a.size, 1024u + 512u);
  EXPECT_EQ(scheduler::peak_live_bytes(r), a.size);
}

TEST(Arena, EmptyRequestsStillGetDistinctAddresses) {
  std::vector<scheduler::ArenaRequest> r = {{0, 0, 5}, {0, 0, 5}};
  scheduler::ArenaLayout a = scheduler::assign_offsets(r);
  EXPECT_NE(a.offset[0], a.offset[1]);
}

TEST(Plan, ChainReusesDeadIntermediates) {
  auto c = compile_text("chain.grp", R"(
fn main(x: f32[N, 64], w: f32[64, 64]) -> f32[N, 64] {
  let a = softmax(x @ w, axis=-1)
  let b = softmax(a @ w, axis=-1)
  let d = softmax(b @ w, axis=-1)
  return softmax(d @ w, axis=-1)
}
)");
  const ir::Function& f = *c->mod->find("main");
  Planned pl = plan_of(f);
  check_plan(f, pl, 128, "chain");
  std::map<std::string, int64_t> dims{{"N", 128}};
  scheduler::ArenaLayout a = scheduler::plan_arena(pl.plan, dims);
  size_t total = 0;
  for (const auto& s : pl.plan.storages)
    if (s.kind == scheduler::StorageKind::Arena) total += scheduler::bytes_of(s.type, dims);
  EXPECT_LT(a.size, total) << pl.plan.str();
}

TEST(Plan, EveryExampleEntry) {
  for (const char* file : {"examples/gpt2.grp", "examples/bert.grp", "examples/mlp.grp"}) {
    auto c = compile_text(file, read(fs::path(GRAPE_SOURCE_DIR) / file),
                          {{"L", 2},
                           {"E", 64},
                           {"NH", 4},
                           {"V", 128},
                           {"P", 64},
                           {"T", 64},
                           {"N", 8},
                           {"H", 64},
                           {"I", 256},
                           {"D", 32}});
    if (!c->mod) continue;
    for (const auto& f : c->mod->functions) {
      SCOPED_TRACE(std::string(file) + " " + f.name);
      check_plan(f, plan_of(f), 5, std::string(file) + " " + f.name);
    }
  }
}

TEST(Plan, EveryControlFlowCase) {
  for (const auto& e : fs::directory_iterator(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases")) {
    if (e.path().extension() != ".grp") continue;
    auto c = compile_text(e.path().string(), read(e.path()));
    if (!c->mod) continue;
    for (const auto& f : c->mod->functions)
      check_plan(f, plan_of(f), 3, e.path().filename().string() + " " + f.name);
  }
}

TEST(Plan, LoopsNest) {
  fs::path p = fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases/nested_while_in_for.grp";
  auto c = compile_text(p.string(), read(p));
  const ir::Function& f = *c->mod->find("main");
  Planned pl = plan_of(f);
  int deepest = 0;
  for_each_step(pl.plan, pl.plan.steps, 0, [&](const scheduler::Step& s, int depth) {
    if (s.kind == scheduler::Step::Kind::Loop) deepest = std::max(deepest, depth + 1);
  });
  EXPECT_GE(deepest, 2) << pl.plan.str();
  // Each loop's condition is computed by its body.
  for (const auto& l : pl.plan.loops) {
    EXPECT_GE(l.cond, 0);
    EXPECT_GE(l.init_cond, 0);
  }
}

// The KV cache is written in place by decode_step: no copy of a state before its update.
TEST(Plan, StateUpdatedInPlace) {
  auto c = compile_text("gpt2.grp", read(fs::path(GRAPE_SOURCE_DIR) / "examples/gpt2.grp"),
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  const ir::Function& f = *c->mod->find("decode_step");
  Planned pl = plan_of(f);
  int state_copies = 0;
  for_each_step(pl.plan, pl.plan.steps, 0, [&](const scheduler::Step& s, int) {
    if (s.kind != scheduler::Step::Kind::Copy) return;
    if (pl.plan.storages[static_cast<size_t>(s.src)].kind == scheduler::StorageKind::State) ++state_copies;
    if (pl.plan.storages[static_cast<size_t>(s.dst)].kind == scheduler::StorageKind::State) ++state_copies;
  });
  EXPECT_LE(state_copies, 1) << pl.plan.str();  // at most the position counter's write
}

// Updates folded into a product's epilogue (scheduler/fusion.h; the GPU case
// tests/difftest/cases/folded_updates.grp): the product's kernel updates states s and r in place,
// except that s's old contents are read after the update, so s is copied first and the kernel
// updates the copy.
TEST(Plan, FoldedUpdateOfAStateStillReadIsCopiedFirst) {
  auto c = compile_text("folded_updates.grp",
                        read(fs::path(GRAPE_SOURCE_DIR) / "tests/difftest/cases/folded_updates.grp"));
  ASSERT_TRUE(c->mod);
  const ir::Function& f = *c->mod->find("main");
  Planned pl = plan_of(f);
  check_plan(f, pl, 1, "folded_updates");
  const scheduler::ExecPlan& p = pl.plan;
  auto state_named = [&](int st, const char* name) {
    return st >= 0 && p.storages[static_cast<size_t>(st)].kind == scheduler::StorageKind::State &&
           p.storages[static_cast<size_t>(st)].name == name;
  };
  const jit::KernelSpec* product = nullptr;
  size_t at = 0;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (p.steps[i].kind == scheduler::Step::Kind::Launch && pl.specs[p.steps[i].index].aliases.size() == 2) {
      product = &pl.specs[p.steps[i].index];
      at = i;
    }
  ASSERT_NE(product, nullptr) << "one kernel updates s and r\n" << p.str();
  ASSERT_GE(at, 1u);
  const scheduler::Step& before = p.steps[at - 1];
  EXPECT_EQ(before.kind, scheduler::Step::Kind::Copy) << p.str();
  EXPECT_TRUE(state_named(before.src, "s")) << p.str();
  bool r_in_place = false, s_in_place = false;
  for (const auto& [out, in] : product->aliases) {
    const int st = p.storage_of.at(static_cast<size_t>(product->buffers[out]));
    r_in_place = r_in_place || state_named(st, "r");
    s_in_place = s_in_place || state_named(st, "s");
    if (!state_named(st, "r")) {
      EXPECT_EQ(st, before.dst) << "s's update goes to its copy";
    }
  }
  EXPECT_TRUE(r_in_place) << p.str();
  EXPECT_FALSE(s_in_place) << p.str();
}

// States are written only in the commit phase (plan.first_state_write to the end), which has no
// loops: an executor that stops a run only before it leaves the states as they were, and the
// steps it cannot stop are a few launches and copies, no host round trips.
TEST(Plan, StatesWrittenOnlyInTheCommitPhase) {
  auto c = compile_text("gpt2.grp", read(fs::path(GRAPE_SOURCE_DIR) / "examples/gpt2.grp"),
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  int with_states = 0;
  for (const auto& f : c->mod->functions) {
    SCOPED_TRACE(f.name);
    Planned pl = plan_of(f);
    const scheduler::ExecPlan& p = pl.plan;
    ASSERT_LE(p.first_state_write, p.steps.size());
    auto writes = [&](const scheduler::Step& s) {
      if (s.kind == scheduler::Step::Kind::Copy)
        return p.storages[static_cast<size_t>(s.dst)].kind == scheduler::StorageKind::State;
      if (s.kind != scheduler::Step::Kind::Launch) return false;
      const auto& spec = pl.specs[s.index];
      for (size_t j = spec.num_inputs; j < spec.buffers.size(); ++j) {
        int st = p.storage_of.at(static_cast<size_t>(spec.buffers[j]));
        if (st >= 0 && p.storages[static_cast<size_t>(st)].kind == scheduler::StorageKind::State) return true;
      }
      return false;
    };
    for (size_t i = 0; i < p.steps.size(); ++i) {
      if (i < p.first_state_write) {
        int nested = 0;
        for_each_step(p, {p.steps[i]}, 0, [&](const scheduler::Step& s, int) { nested += writes(s); });
        EXPECT_EQ(nested, 0) << "step " << i << " writes a state before the commit phase\n" << p.str();
      } else {
        EXPECT_NE(p.steps[i].kind, scheduler::Step::Kind::Loop) << "a loop in the commit phase\n" << p.str();
      }
    }
    if (p.first_state_write < p.steps.size()) {
      EXPECT_TRUE(writes(p.steps[p.first_state_write])) << p.str();
      ++with_states;
    }
  }
  EXPECT_GE(with_states, 1);  // decode_step writes the KV cache
}

// The premise of the GPU test EagerExecutor.StoppedRunLeavesStatesAsTheyWere (the same program):
// state `a` is updated in place by one of the first steps, and thousands of launches follow
// before `b` is written, so a run stopped anywhere after the commit phase began would leave `a`
// updated and `b` not.
TEST(Plan, InPlaceStateUpdateStartsTheCommitPhaseEarly) {
  auto c = compile_text("two_states.grp", test_programs::kTwoStates);
  ASSERT_TRUE(c->mod);
  Planned pl = plan_of(*c->mod->find("main"));
  const scheduler::ExecPlan& p = pl.plan;
  EXPECT_LT(p.first_state_write, 5u) << p.str();
  size_t launches_after = 0;
  for (size_t i = p.first_state_write; i < p.steps.size(); ++i)
    launches_after += p.steps[i].kind == scheduler::Step::Kind::Launch;
  EXPECT_GE(launches_after, 2000u);
}

// An `if` around a chain of assignments is one predicated region of the plan (the selects between
// the assignments fold away: ir/passes/predicated_selects.h), ending before the one select that
// merges the branch; the graph executor runs such a region as a conditional IF node.
TEST(Plan, AnIfBranchIsOnePredicatedRegion) {
  std::string src = "fn main(x: f32[8, 64], go: bool[]) -> f32[8, 64] {\n  var y = x\n  if go {\n";
  for (int i = 0; i < 40; ++i) src += "    y = softmax(y * 3.0, axis=-1)\n";
  src += "  }\n  return y\n}\n";
  auto c = compile_text("if_region.grp", src);
  const ir::Function& f = *c->mod->find("main");
  Planned pl = plan_of(f);
  check_plan(f, pl, 8, "if_region");
  const auto& steps = pl.plan.steps;
  auto regions = pl.plan.predicated_regions(steps, 0, SIZE_MAX, 32);
  ASSERT_EQ(regions.size(), 1u) << pl.plan.str();
  EXPECT_EQ(regions[0].end - regions[0].begin, 40u) << pl.plan.str();
  EXPECT_EQ(regions[0].pred, f.params[1].value);
  for (size_t i = regions[0].begin; i < regions[0].end; ++i)
    EXPECT_EQ(steps[i].kind, scheduler::Step::Kind::Launch);
  size_t unpredicated = 0;
  for (const auto& s : steps) unpredicated += pl.plan.step_pred(s) == ir::kNoValue ? 1 : 0;
  EXPECT_EQ(unpredicated, steps.size() - 40) << "the select after the branch";
  EXPECT_LE(unpredicated, 2u) << pl.plan.str();
  EXPECT_TRUE(pl.plan.predicated_regions(steps, 0, SIZE_MAX, 41).empty());
  // A window that cuts the region keeps only its part.
  auto part = pl.plan.predicated_regions(steps, regions[0].begin + 10, regions[0].begin + 20, 1);
  ASSERT_EQ(part.size(), 1u);
  EXPECT_EQ(part[0].begin, regions[0].begin + 10);
  EXPECT_EQ(part[0].end, regions[0].begin + 20);
}

// Weight prefetching (scheduler/prefetch.h): a matrix product's W is a prefetch target only when
// it is a weight of the program (an entry's parameter may be written by the caller or a kernel).
TEST(Prefetch, OnlyAWeightIsATarget) {
  auto c = compile_text("t.grp", R"(model t
weights {
  w: f16[64, 32]
}
fn main(x: f16[4, 64], v: f16[64, 32]) -> f16[4, 32] {
  return (x @ w) + (x @ v)
}
)");
  Planned pl = plan_of(*c->mod->find("main"));
  int weights = 0, others = 0;
  for (const auto& s : pl.specs) {
    if (s.launch.kind != jit::LaunchRule::MatrixProduct) continue;
    const int wb = s.launch.weight_buffer;
    if (wb >= 0) {
      ++weights;
      EXPECT_EQ(
          pl.plan.storages[static_cast<size_t>(pl.plan.storage(s.buffers.at(static_cast<size_t>(wb))))].kind,
          scheduler::StorageKind::Weight);
    } else {
      ++others;
    }
  }
  EXPECT_EQ(weights, 1);
  EXPECT_EQ(others, 1);
}

std::vector<bool> prefetch_targets(const Planned& pl) {
  std::vector<bool> t;
  for (const auto& s : pl.specs)
    t.push_back(s.launch.kind == jit::LaunchRule::MatrixProduct && s.launch.weight_buffer >= 0);
  return t;
}

// Launch order of one step list (kernel indices).
std::vector<int> launches_of(const std::vector<scheduler::Step>& steps) {
  std::vector<int> out;
  for (const auto& s : steps)
    if (s.kind == scheduler::Step::Kind::Launch) out.push_back(static_cast<int>(s.index));
  return out;
}

// GPT-2's decode step: 4 products with weights per layer. Each but the first is prefetched exactly
// once, by the product before it; only products prefetch.
TEST(Prefetch, EachWeightIsRequestedByThePreviousProduct) {
  auto c = compile_text("gpt2.grp", read(fs::path(GRAPE_SOURCE_DIR) / "examples/gpt2.grp"),
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  Planned pl = plan_of(*c->mod->find("decode_step"));
  const std::vector<bool> target = prefetch_targets(pl);
  const std::vector<int> order = launches_of(pl.plan.steps);
  std::vector<int> products;
  for (int k : order)
    if (target[static_cast<size_t>(k)]) products.push_back(k);
  ASSERT_GE(products.size(), 8u);  // 2 layers x (qkv, out, fc, proj), and lm_head
  const std::vector<int> by = scheduler::plan_prefetches(pl.plan, target, scheduler::PrefetchMode::Previous);
  auto position = [&](int k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
  std::vector<int> requested(pl.specs.size(), 0);
  for (size_t k = 0; k < by.size(); ++k) {
    if (by[k] < 0) continue;
    ++requested.at(static_cast<size_t>(by[k]));
    EXPECT_TRUE(target.at(static_cast<size_t>(by[k])));
    EXPECT_LT(position(static_cast<int>(k)), position(by[k])) << "kernel " << k;
  }
  for (size_t i = 0; i < products.size(); ++i) {
    EXPECT_EQ(requested[static_cast<size_t>(products[i])], i == 0 ? 0 : 1) << "product " << i;
    if (i > 0) {
      EXPECT_EQ(by[static_cast<size_t>(products[i - 1])], products[i]) << "product " << i;
    }
  }
  for (size_t k = 0; k < by.size(); ++k) {
    if (!target[k]) {
      EXPECT_EQ(by[k], -1) << "kernel " << k;
    }
  }
  EXPECT_EQ(by[static_cast<size_t>(products.back())], -1);  // nothing after the last one

  // None: nothing.
  for (int k : scheduler::plan_prefetches(pl.plan, target, scheduler::PrefetchMode::None)) EXPECT_EQ(k, -1);
}

// In a loop body (generate's decode loop) the last product requests the first one's weight for
// the next trip, and no kernel requests a weight of another step list.
TEST(Prefetch, ALoopBodyWrapsAround) {
  auto c = compile_text("gpt2.grp", read(fs::path(GRAPE_SOURCE_DIR) / "examples/gpt2.grp"),
                        {{"L", 2}, {"E", 64}, {"NH", 4}, {"V", 128}, {"P", 64}, {"T", 64}, {"N", 8}});
  Planned pl = plan_of(*c->mod->find("generate"));
  const std::vector<bool> target = prefetch_targets(pl);
  const std::vector<int> by = scheduler::plan_prefetches(pl.plan, target, scheduler::PrefetchMode::Previous);
  bool wrapped = false;
  for (const auto& l : pl.plan.loops) {
    const std::vector<int> body = launches_of(l.body);
    std::vector<int> products;
    for (int k : body)
      if (target[static_cast<size_t>(k)]) products.push_back(k);
    for (int k : body) {
      const int t = by[static_cast<size_t>(k)];
      if (t >= 0) {
        EXPECT_NE(std::find(body.begin(), body.end(), t), body.end()) << "kernel " << k;
      }
    }
    if (products.size() > 1) {
      EXPECT_EQ(by[static_cast<size_t>(products.back())], products.front());
      wrapped = true;
    }
  }
  EXPECT_TRUE(wrapped) << pl.plan.str();
}

}  // namespace
}  // namespace grape
