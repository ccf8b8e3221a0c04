// Fusion: which IR ops become one CUDA kernel. One plan per function; loop bodies get their own
// groups (a group never spans blocks, predicates, or a loop op).
//
// Rules (each op gets a role, decided consumers-first, in reverse program order of its block):
//  - Executor ops (Param, Weight, StateRead, StateWrite, Loop, DimValue) are not kernels.
//  - Reshape and identity slices are views: Inlined into their only consumer when that is a kernel
//    op of the same predicate, else an Alias of the operand's bytes (no kernel).
//  - Pointwise ops (elementwise, select, cast, where, expand, permute, slice, concat, take,
//    take_along_axis, one_hot, causal_mask, arange, full, constant) are Inlined into their
//    consumer's kernel (recomputed at each index the consumer reads) when their result has exactly
//    one use, in the same block, by a kernel op with the same predicate that accepts an inlined
//    operand there (everything except slice_update's in-place operand). Constant/full/arange have no
//    inputs and are inlined into every kernel consumer, whatever their predicate or use count.
//    An op under a predicate is also inlined into a select on that predicate that reads it as its
//    taken branch, and an op with no predicate into a consumer of any predicate.
//  - A pointwise result of at most kRecomputeMaxElements elements (constant shape) used by several
//    kernel ops, each of which could inline it, is inlined into all of them (recomputed in each):
//    scalar bookkeeping in loops would otherwise be one launch per op.
//  - A value must be materialised (written to memory by its group) when it is used more than once,
//    used by an executor op or an alias, used as a predicate, yielded, used in another block, or is
//    slice_update's in-place operand.
//  - Epilogues: a matmul/linear, reduction, arg-reduction, softmax, layer/rms norm or cumsum whose
//    only use is an elementwise chain of the same shape and predicate (bias add, residual add, gelu,
//    scale, mask ...) becomes the Core of that chain's kernel: the kernel has the core's loop
//    structure and applies the chain to each result element before storing it.
//  - Row prologues: a layer_norm / rms_norm / softmax / log_softmax over the last axis whose only
//    use is operand A of a matmul/linear (same predicate) is computed inside the matrix product
//    (row statistics per block, normalised A elements produced while loading the tiles).
//  - Attention: a batched matmul (q @ k^T) whose only use is an elementwise chain of its shape
//    (scale, mask) ending in the softmax row prologue of a matmul (p @ v) is computed inside that
//    group: one kernel for the whole attention, scores never in memory. Head widths must be
//    constants <= kMaxFusedHeadDim (the kernel keeps a row of the output in registers). With a
//    constant number of query rows <= kMaxFusedQueries (decode) the kernel is
//    jit/kernels/attention.cuh, any float type; with more or a runtime number of rows (prefill,
//    encoders) it is jit/kernels/attention_mma.cuh on the tensor cores, which needs q, k, v and
//    the softmax in one 16-bit type (f16, bf16) and head widths <= kMaxFusedMmaHeadDim.
//  - Stores through a permute: when a fused attention's output (with no epilogue) is used only by a
//    permute of the same predicate (BERT's merge of the heads, [B, H, S, D] -> [B, S, H, D]), that
//    permute becomes the group's root and the kernel stores each element at its permuted place.
//    The product that reads the merged heads then reads a plain buffer (rows contiguous, no index
//    arithmetic per element) instead of a view, and no copy kernel materialises the permute.
//  - Everything else (reductions, norms, matmul, topk, cumsum, slice_update, and pointwise ops that
//    must be materialised) is the Root of its own kernel.
//  - Sibling products (horizontal fusion): linear groups of one block and predicate that read the
//    same materialised A, each with a 16-bit weight of the program and its own epilogue, become one
//    kernel over their concatenated output columns (FusionGroup::parts), placed where the first of
//    them was; a later one joins only when everything it reads exists there. BERT's q, k and v
//    projections at batch 1: one launch of 36 tiles instead of three of 12 on 132 multiprocessors.
//    The roots of the parts after the first are PartRoot.
//  - Sibling updates (horizontal fusion): consecutive slice_update groups of one block and
//    predicate, none of which reads what another writes or updates (the same memory, through
//    aliasing views, updates and state reads), become one kernel over all of
//    their elements (FusionGroup::parts, in launch order), placed where the LAST of them was: the
//    earlier ones' results must have no use before that place and no loop may lie in between.
//    Parts that each fit a block sequence (scheduler/sequence.h) are not merged past that size.
//    A decode step's key and value cache writes: one launch per layer instead of two. The roots of
//    the parts before the last are PartRoot. GRAPE_SIBLING_UPDATES=0 turns it off.
//  - Folded updates: a slice_update whose value is a matrix product's output seen through views
//    (slices without runtime starts, reshapes, permutes) is written by that product's epilogue:
//    each output element the views keep is also stored at its place in the update's region. The
//    update moves up to the product's place, so nothing launched in between may read or write the
//    updated memory (compared as for sibling updates), no loop may lie in between, and what it reads
//    (its runtime starts) must exist there. Same predicate as the product, or none with the value
//    `select(%p, views of the output, the region's old contents)` where %p is the product's
//    predicate (an update in an `if` branch): the product's kernel runs only where %p holds, and
//    the old contents stay where it does not. A decode step's key and value cache rows are written
//    by the q/k/v product: one launch per layer fewer. The update's op is PartRoot.
//    GRAPE_FOLD_UPDATES=0 turns it off.
#pragma once
#include <cstddef>
#include <map>
#include <set>
#include <vector>

#include "ir/ir.h"

namespace grape::scheduler {

enum class OpRole {
  Executor,         // handled by the executor (see jit/kernel_spec.h)
  Alias,            // the result is the operand's bytes
  Root,             // writes its group's output(s)
  Inlined,          // computed inside the kernel(s) of its consumer(s), never materialised
  Core,             // the heavy op of a group whose root is its elementwise epilogue
  RowPrologue,      // a row normalisation computed inside a matmul group
  AttentionScores,  // the q @ k^T product of a fused attention group
  PartRoot,         // writes its output from the kernel of a sibling (parts): a product's before
                    // it, an update's after it; or a folded update, from its product's epilogue
};
const char* role_name(OpRole r);

struct FusionGroup {
  const ir::Operation* root = nullptr;
  // The op that gives the kernel its loop structure: root itself when root is not pointwise, the
  // fused heavy op when root is its epilogue, null for a purely pointwise kernel.
  const ir::Operation* core = nullptr;
  const ir::Operation* row_prologue = nullptr;
  // Fused attention: the q @ k^T product whose scores, through an elementwise chain, are the input
  // of the softmax row prologue of this group's p @ v core (jit/kernels/attention.cuh).
  const ir::Operation* attention_scores = nullptr;
  std::vector<const ir::Operation*> ops;  // every op computed by the kernel, program order
  std::vector<ir::ValueId> inputs;        // values read from memory
  std::vector<ir::ValueId> outputs;       // values written (root's results)
  ir::ValueId pred = ir::kNoValue;
  // Sibling products or updates computed by this one kernel (rules above): each part is the group
  // it would have been on its own; this group's root and core are parts[0]'s for products, the
  // last part's for updates. Empty for an ordinary group. Here, ops, inputs and outputs are the
  // parts' together (outputs in part order).
  std::vector<FusionGroup> parts;
  // Folded updates (rules above) whose writes this kernel's epilogue does. Their ops are in `ops`,
  // what they read in `inputs`, their results after the group's own in `outputs`.
  struct FoldedUpdate {
    const ir::Operation* update = nullptr;  // the slice_update
    ir::ValueId source = ir::kNoValue;      // the product's output (one of `outputs`) it writes
    // The views from `source` to the update's value, in that order (each reads the one before).
    std::vector<const ir::Operation*> views;
  };
  std::vector<FoldedUpdate> folded_updates;
};

// At most this many buffers (inputs and outputs) in a kernel of sibling products; the kernel
// parameter block holds jit::kMaxBuffers.
constexpr size_t kMaxSiblingBuffers = 16;
// At most this many products in one kernel (each adds a branch to every store and weight row).
constexpr size_t kMaxSiblingParts = 4;

struct BlockPlan {
  const ir::Block* block = nullptr;
  std::vector<FusionGroup> groups;  // launch order
};

struct FusionPlan {
  std::vector<BlockPlan> blocks;  // the function body first, then loop bodies (pre-order)
  std::map<const ir::Operation*, OpRole> roles;
  std::set<ir::ValueId> inlined;  // values never materialised
  size_t num_kernels() const;
  size_t num_kernels(const ir::Block* b) const;
};

FusionPlan plan_fusion(const ir::Function& f);

// Pointwise results up to this many elements are recomputed by each consumer (rules above).
constexpr int64_t kRecomputeMaxElements = 64;

constexpr int64_t kMaxFusedHeadDim = 256;
// Up to this many query rows (a constant: decode steps) attention is fused into attention.cuh,
// whose dot products run on the SIMT units; with more rows (encoders, prefill) that kernel is
// slower than the two general ones (bench/RESULTS.md: BERT s=128 b=16 attention 0.95 ms), and the
// tensor-core kernel attention_mma.cuh takes them.
constexpr int64_t kMaxFusedQueries = 16;
// attention_mma.cuh keeps a 16-row slice of the output and of q in registers.
constexpr int64_t kMaxFusedMmaHeadDim = 128;
// Whether a fused attention with this many query rows runs on the tensor cores.
inline bool attention_on_tensor_cores(const ir::Dim& queries) {
  return !queries.is_const() || queries.const_value() > kMaxFusedQueries;
}

// Whether `m` slices update `u`'s operand at exactly u's region (same starts, sizes and steps): the
// old contents a predicated update writes back where its predicate is false.
bool reads_update_region(const ir::Operation& u, const ir::Operation& m);
// Whether an op is computed per output element from its operands (and so can be inlined).
bool is_pointwise(ir::Op op);
// Reshapes and slices that only drop constant size-1 axes / take whole axes: same bytes.
bool is_identity_view(const ir::Function& f, const ir::Operation& op);

}  // namespace grape::scheduler
