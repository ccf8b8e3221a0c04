// The execution plan of one entry: built once from the IR, the fusion plan and the kernels; every
// executor (eager, graph, and the ones to come) runs from it, so nothing walks the IR at run time.
//
// A plan is a tree of step lists. The function body is the root list; a device loop is a Loop
// step whose body is a nested list. Every IR value that lives in memory is mapped to a Storage:
// the arena (intermediates, inputs, loop-carried values: offsets from liveness intervals, see
// scheduler/arena.h), a weight, a state, or a dim value (an i32 the executor writes beside the
// parameter blocks). Views and in-place updates share their operand's storage; everything that
// must move bytes is an explicit Copy step, so executors never decide aliasing themselves.
//
// Positions: every op gets one number in program order (pre-order through loop bodies); a loop
// occupies [its op's position, the end of its body]. A storage is live over the closed interval
// [first, last] of positions. A value defined outside a loop and read inside it stays live until
// that loop ends (the body runs again).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "scheduler/fusion.h"

namespace grape::scheduler {

// What the plan needs to know about one generated kernel (jit::KernelSpec carries it; the plan
// takes this copy so that scheduler/ depends on nothing in jit/).
struct KernelUse {
  const ir::Operation* root = nullptr;
  std::vector<const ir::Operation*> ops;  // every op the kernel computes
  std::vector<ir::ValueId> buffers;       // inputs first, then outputs
  size_t num_inputs = 0;
  std::vector<std::pair<size_t, size_t>> aliases;  // (output buffer, input buffer): in-place
  ir::ValueId pred = ir::kNoValue;
};

enum class StorageKind {
  Arena,     // an interval of the plan's arena
  Weight,    // a weight (outside the arena, uploaded once)
  State,     // a state tensor (outside the arena, kept between runs)
  DimValue,  // the i32 value of `dim`, written with the parameter blocks
};
const char* storage_kind_name(StorageKind k);

struct Storage {
  StorageKind kind = StorageKind::Arena;
  std::string name;             // Weight, State: the tensor's name
  ir::Type type;                // of the value that created it; its byte size is the storage's
  ir::Dim dim;                  // DimValue
  int64_t first = 0, last = 0;  // Arena: live interval (positions, closed)
  int input = -1;               // Arena: the entry parameter copied in at the start of a run
};

// Bytes of `t` with the symbols bound by `dims`.
size_t bytes_of(const ir::Type& t, const std::map<std::string, int64_t>& dims);

struct Step {
  enum class Kind {
    Launch,  // kernel `index`; its parameter block is slot `index` of the plan's block array
    Copy,    // storage src -> dst (the size of dst); when `pred` is set, only if *pred != 0
    Loop,    // plan.loops[index]
  } kind = Kind::Launch;
  size_t index = 0;
  int dst = -1, src = -1;
  ir::ValueId pred = ir::kNoValue;
  const ir::Operation* op = nullptr;  // the IR op it comes from (messages)
  const char* why = "";               // Copy: what it is for (messages, statistics)
};

// A device loop: `init` copies (initial values into the carried storages) run before it in the
// enclosing list. The loop runs `body` while the storage `cond` (a bool) is nonzero and, when
// max_trips >= 0, at most max_trips times. `init_cond` is checked before the first trip, `cond`
// (computed by the body, whose last steps copy the yields into the carried storages) after each.
struct LoopPlan {
  const ir::Operation* op = nullptr;
  int init_cond = -1;
  int cond = -1;
  int64_t max_trips = -1;
  std::vector<int> carried;  // one storage per carried value, shared by body params and results
  std::vector<Step> body;
  int64_t begin = 0, end = 0;  // positions
};

// Steps [begin, end) of one step list that all run under the same predicate (kernels whose
// parameter block carries `pred`, copies with `pred`): each checks it itself, so an executor may
// run them as they are or skip the whole region when the predicate is false (the graph executor's
// conditional IF nodes).
struct PredicatedRegion {
  size_t begin = 0, end = 0;
  ir::ValueId pred = ir::kNoValue;
};

struct ExecPlan {
  std::vector<Step> steps;
  std::vector<LoopPlan> loops;
  std::vector<Storage> storages;
  std::vector<int> storage_of;  // per IR value: its storage, -1 when it has none (inlined, unused)
  std::vector<int> inputs;      // per entry parameter
  std::vector<int> outputs;     // per result
  size_t num_kernels = 0;
  std::vector<ir::ValueId> kernel_pred;  // per kernel: the predicate it checks, or kNoValue
  int64_t end = 0;  // one past the last position
  // Index in `steps` of the first step that writes a state (a copy into it, an in-place update, a
  // loop doing either); steps.size() when none does. States are written back only at the end of
  // an entry, so this starts the run's commit phase: an executor that stops a run (interrupt,
  // timeout) only before it leaves the states as they were.
  size_t first_state_write = 0;

  int storage(ir::ValueId v) const;  // throws Internal when the value has none
  // The predicate a Launch or Copy step checks (kNoValue for others and unpredicated ones).
  ir::ValueId step_pred(const Step& s) const;
  // The maximal runs of at least `min_steps` consecutive steps of list[begin, end) under one
  // predicate, in order.
  std::vector<PredicatedRegion> predicated_regions(const std::vector<Step>& list, size_t begin = 0,
                                                   size_t end = SIZE_MAX, size_t min_steps = 1) const;
  // Multi-line listing of steps and storages (for tests and GRAPE_DUMP_PLAN).
  std::string str() const;
};

// `kernels` in the order of jit::emit_kernels (function body first, then loop bodies). Throws
// grape::Error(Internal) when the IR uses something the plan cannot execute.
ExecPlan build_plan(const ir::Function& f, const FusionPlan& fusion, const std::vector<KernelUse>& kernels);

}  // namespace grape::scheduler
