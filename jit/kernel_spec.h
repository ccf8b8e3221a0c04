// The contract between CUDA code generation (jit/codegen.h) and the executors: what one generated
// kernel reads, writes and how it is launched.
//
// Every generated kernel is `extern "C" __global__ void grape_kernel(const __grid_constant__ KParams kp)`
// (jit/kernel_source.h), one per module; KParams is jit/kernel_abi.h on both sides. For each KernelSpec the
// executor must:
//   1. Allocate a device buffer for every value in `buffers` that is not already bound (weights,
//      state, inputs, arena slots). Values are laid out contiguously (C order) in their IR dtype;
//      bool is one byte (0/1).
//   2. Honour `aliases`: for each (out, in) pair, buffers[out] must be the SAME device memory as
//      buffers[in] (in-place update, SliceUpdate). If the input value is still live after this
//      kernel (read by a later kernel in launch order, a yield, a state, a select ...), copy it into
//      a fresh buffer first and bind that copy as both.
//   3. Fill a KParams block: pred = device pointer to the predicate's bool (null if pred == kNoValue),
//      buf[i] = device pointer of buffers[i], shape[i][d] = the concrete dims of buffers[i]'s IR type
//      (f.type(v).shape evaluated with the current symbol bindings; unused entries 0), and
//      extra[i] = this->extra[i].eval(dims).
//   4. Launch with scheduler::launch_dims(launch, dims) (scheduler/launch.h): the block size is
//      mandatory (launch.threads); the grid size is a performance hint only. Every kernel loops over
//      its work with grid-stride loops bounded by the ACTUAL dims in KParams, so a launch sized for a
//      larger shape of the same bucket (or any grid >= 1) is correct.
//   Kernels run in `kernels` order; a value is live until the last kernel (in that order) that lists
//   it in `buffers`.
//
// Ops that are NOT kernels (scheduler::OpRole, see scheduler/fusion.h):
//   Executor: Param (the entry's inputs), Weight, StateRead, StateWrite (copy or rebind the state),
//             Loop (body blocks have their own kernels; the executor carries values: copies the
//             yields into the body params / results), DimValue (the executor writes the i32 value
//             of attrs.shape[0] into the result buffer whenever the symbol bindings change, like a
//             parameter block).
//   Alias:    Reshape, and "identity" slices (static start 0, step 1, whole axes, squeezing only
//             constant size-1 axes): the result is the operand's bytes, no kernel.
//   Constant: materialised constants are tiny kernels (one element); most are inlined into their
//             consumers as literals and never materialised.
//   Select:   a kernel (device predicate, no host sync): out = *p ? a : b elementwise.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "jit/kernel_abi.h"
#include "scheduler/launch_rule.h"

namespace grape::jit {

constexpr int kMaxBuffers = GRAPE_KMAX_BUFFERS;
constexpr int kMaxRank = GRAPE_KMAX_RANK;
constexpr int kMaxExtra = GRAPE_KMAX_EXTRA;

// How a kernel is launched: scheduler/launch_rule.h (the scheduler sizes launches; code
// generation fills the rule in).
using LaunchRule = scheduler::LaunchRule;

struct KernelSpec {
  std::string name;                  // unique within a module, for messages; the symbol is kKernelSymbol
  std::string source;                // complete CUDA C++ (includes cuda_fp16.h, cuda_bf16.h, mma.h)
  std::vector<ir::ValueId> buffers;  // inputs first, then outputs
  size_t num_inputs = 0;
  std::vector<std::pair<size_t, size_t>> aliases;  // (output buffer index, input buffer index)
  ir::ValueId pred = ir::kNoValue;
  LaunchRule launch;
  std::vector<const ir::Operation*> ops;  // every op computed by this kernel, program order
  const ir::Operation* root = nullptr;    // the op whose result(s) the kernel writes
  std::vector<ir::Dim> extra;             // KParams::extra[i] = extra[i].eval(bindings)
  const ir::Block* block = nullptr;       // the block (function body or loop body) it belongs to
  // The embedded templates its source includes, and its glue as a device function for block
  // sequences (jit/sequence_source.h; "" when it cannot run in one).
  std::vector<std::string> templates;
  std::string sequence_body;
};

}  // namespace grape::jit
