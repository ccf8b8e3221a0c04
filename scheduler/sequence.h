// Block sequences: runs of small steps that one thread block runs in one kernel launch.
//
// Control-heavy programs (beam search's scan over its candidates, a generation loop's bookkeeping)
// run many kernels that each touch a few hundred elements. Each launch, or graph node, costs about
// a microsecond, far more than its work; a device loop of them also pays a conditional node (or a
// host round trip) per trip. A block sequence runs such steps one after another in ONE launch of
// ONE block of 256 threads: each kernel's body (its glue as a __device__ function, which loops
// over all its work items when gridDim is 1) is called in turn with __syncthreads() between
// calls, which makes the block's global writes visible to all its threads; copies are done by the
// block; a device loop whose whole body fits runs every trip inside, its condition read from
// memory after each trip. There is one block, so no grid-wide synchronisation is needed.
//
// A step fits when it is:
//  - a Launch of a kernel that can run as a device function (jit::KernelSpec::sequence_body: one
//    entry point of 128 or 256 threads, no dynamic shared memory; a sequence's read-only-path
//    loads become plain loads, since an input may have been written earlier in the same launch)
//    of a kind that loops over its work in one block (fits_block_sequence);
//  - a Copy;
//  - a Loop with a static trip bound (`max`, or a `for` range: no run-time trip cap to report)
//    whose body's steps all fit.
// A sequence is a maximal run of fitting steps of one step list under one predicate
// (ExecPlan::step_pred), whose kernels all have the same block size, so it never straddles a
// predicated region (the graph executor's IF nodes), nor the top level's first state write (the
// start of the commit phase, before which an interrupted run stops). It holds at least two steps,
// or a loop. A longer run than the limits below is split.
//
// Whether a sequence is small enough depends on the binding: the executors run it as one launch
// only where every kernel, alone, would use at most kSequenceMaxBlocks blocks and every copy is
// at most kSequenceMaxCopyBytes, at the top of the shape buckets of the dims bound
// (small_for_block_sequence; the same decision for every binding of a bucket, so one graph serves
// the bucket); elsewhere its steps run one by one.
//
// GRAPE_SEQUENCES=0 turns them off (same-run baselines).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "scheduler/launch_rule.h"
#include "scheduler/plan.h"

namespace grape::scheduler {

// A kernel fits when alone it would launch at most this many blocks: in a sequence one block
// does all of its work, one grid-stride pass after another.
constexpr int64_t kSequenceMaxBlocks = 4;
constexpr size_t kSequenceMaxCopyBytes = 64 * 1024;
// Slots of a sequence's parameter block: GRAPE_SEQ_MAX_* of jit/kernel_abi.h (asserted equal there).
constexpr size_t kSequenceMaxKernels = 64, kSequenceMaxCopies = 32, kSequenceMaxLoops = 4;

// Whether a kernel with this launch rule may be in a sequence (block size, kind). The kernel must
// also be able to run as a device function (jit decides).
bool fits_block_sequence(const LaunchRule& rule);
// Whether it is small enough to run inside one at these dims.
bool small_for_block_sequence(const LaunchRule& rule, const std::map<std::string, int64_t>& dims);

struct BlockSequence {
  const std::vector<Step>* list = nullptr;  // the plan's top level or a loop's body
  size_t begin = 0, end = 0;                // steps [begin, end) of *list
  ir::ValueId pred = ir::kNoValue;          // the predicate every step checks (kNoValue: none)
  int threads = 256;                        // the block size of its kernels
  // Slots of the SeqParams block (jit/kernel_abi.h), in the order the steps reach them (loop
  // bodies included): the kernels launched, the copies, the loops (plan.loops indices).
  std::vector<size_t> kernels;
  std::vector<const Step*> copies;
  std::vector<size_t> loops;
};

// The sequences of every step list of `plan`; kernel_threads[k]: kernel k's block size when it
// fits (see above), else 0.
std::vector<BlockSequence> plan_block_sequences(const ExecPlan& plan, const std::vector<int>& kernel_threads);
// Whether sequence `s` runs as one launch at these dims (see above); `kernels` are the plan's
// kernels' launch rules.
bool sequence_small_enough(const ExecPlan& plan, const BlockSequence& s,
                           const std::vector<LaunchRule>& kernels,
                           const std::map<std::string, int64_t>& dims);

// Storages that live only inside one sequence: arena intermediates (not an entry's input or
// result) that no step outside the sequence, and no executor, reads or writes. The sequence keeps
// them in its block's shared memory, so a step reads what the one before wrote without a round
// trip to L2 (jit/sequence_source.h). `first` and `last` are the first and last step, in the
// order the sequence runs them (loop bodies flattened), that use the storage; a use inside a loop
// counts as the whole loop (the next trip may read it again).
struct SequenceLocal {
  int storage = -1;
  size_t first = 0, last = 0;
};
// kernel_storages[k]: the storages kernel k's buffers and predicate use.
std::vector<SequenceLocal> sequence_locals(const ExecPlan& plan, const BlockSequence& s,
                                           const std::vector<std::vector<int>>& kernel_storages);
// The most shared memory a sequence's locals take; those that do not fit stay in global memory.
constexpr size_t kSequenceMaxLocalBytes = 32 * 1024;
// Shared-memory offsets (multiples of 16) for locals of these byte sizes: two share bytes only
// when their intervals do not overlap; SIZE_MAX for a local left in global memory (past
// `budget`). *total: the bytes the placed ones need.
std::vector<size_t> place_sequence_locals(const std::vector<SequenceLocal>& locals,
                                          const std::vector<size_t>& bytes, size_t budget, size_t* total);

// False when GRAPE_SEQUENCES=0 (read at each call: tests switch it).
bool block_sequences_enabled();
// False when GRAPE_SEQUENCE_LOCALS=0: every storage stays in global memory (same-run baselines).
bool sequence_locals_enabled();

}  // namespace grape::scheduler
