// Internal to jit/codegen*: the state of emitting one kernel, and the pointwise expression emitter
// (emit_expr.cpp) shared by every kernel kind (emit_kernels.cpp).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "jit/kernel_spec.h"
#include "scheduler/fusion.h"

namespace grape::jit::detail {

using Idx = std::vector<std::string>;  // a multi-index: one int64 C expression per axis

const char* reg_type(DType t);      // float / int / long long / bool
const char* storage_type(DType t);  // float / __half / __nv_bfloat16 / int / long long / unsigned char
const char* dtype_tag(DType t);     // f32 f16 bf16 i32 i64 b8 (suffix of the prelude's load/store helpers)
// Rounds a float register value to the precision of `t` (f16/bf16), as the CPU does per op.
std::string round_to(DType t, const std::string& x);

struct Ctx {
  Ctx(const ir::Function& fn, const scheduler::FusionGroup& grp);

  const ir::Function& f;
  const scheduler::FusionGroup& g;
  std::vector<ir::ValueId> buffers;  // inputs then outputs
  size_t num_inputs = 0;
  std::map<ir::ValueId, int> buf;                    // value -> buffer slot
  std::map<ir::ValueId, const ir::Operation*> prod;  // values computed in-kernel -> producer
  std::vector<ir::Dim> extra;
  // The core's rounded result at the current index, substituted for its value in the epilogue.
  ir::ValueId leaf = ir::kNoValue;
  std::string leaf_expr;
  int tmp = 0;
  // Offsets known without an unravel: a buffer of shape `dims` read at `idx` is at `flat`.
  struct FlatHint {
    std::vector<ir::Dim> dims;
    Idx idx;
    std::string flat;
  };
  std::vector<FlatHint> flat_hints;
  // The kernel writes none of the buffers it reads (matrix products, attention: their groups hold
  // no in-place op, and the arena never overlaps an input with an output of one kernel): loads go
  // through the read-only path (grape_ldg_*), which the compiler may move above the kernel's own
  // stores, so an epilogue's loads (bias, residual) are issued together instead of one per store.
  bool readonly_inputs = false;
  // The embedded templates (jit/kernels/*.cuh) the kernel's glue instantiates.
  std::vector<std::string> templates;
  // (output, operand) of each slice_update the kernel does in place: the output is the operand's
  // memory (KernelSpec::aliases).
  std::vector<std::pair<ir::ValueId, ir::ValueId>> in_place_updates;
  // Each unravel's variables and the exact lines declaring them, for prune_unused_unravels.
  struct Unravel {
    std::vector<std::string> names;
    std::vector<std::string> lines;
  };
  std::vector<Unravel> unravels;

  std::string fresh(const char* prefix) { return prefix + std::to_string(tmp++); }
  // Unravel variables (t*, i*) have their own count: an unravel prune_unused_unravels drops must
  // not shift the numbers of the names after it, or kernels that differ only in a dead unravel
  // (rows over B, or over B x T) would still differ in text.
  int unravel_tmp = 0;
  std::string fresh_unravel(const char* prefix) { return prefix + std::to_string(unravel_tmp++); }
  const ir::Type& type(ir::ValueId v) const { return f.type(v); }
  // A runtime dim as a C expression: a literal, a buffer's shape entry, or an extra[] slot.
  std::string dim(const ir::Dim& d);
  // A runtime dim as its extra[] slot, even where a buffer's shape entry holds it.
  std::string extra_dim(const ir::Dim& d);
  std::string dim_of(ir::ValueId v, size_t axis) { return dim(type(v).shape.at(axis)); }
  std::string numel(const std::vector<ir::Dim>& dims);
  std::string ravel(const std::vector<ir::Dim>& dims, const Idx& idx);
  // The element offset of a buffer of shape `dims` at idx (ravel, or a constant leading index
  // moved into an extra[] slot; emit_expr.cpp says why).
  std::string buffer_offset(const std::vector<ir::Dim>& dims, const Idx& idx);
  // Declares the index variables of flat `flat` over `dims` (C order); returns them.
  Idx unravel(const std::string& flat, const std::vector<ir::Dim>& dims, std::string& code,
              const std::string& ind);
  // The input index of a reshape that splits or merges axes, group by group (emit_expr.cpp).
  bool reshape_by_groups(const std::vector<ir::Dim>& in, const std::vector<ir::Dim>& out, const Idx& idx,
                         Idx& ix, std::string& code, const std::string& ind);
  // Broadcast (right-aligned; constant size-1 axes read index 0) of `idx` into value v's shape.
  Idx broadcast_index(ir::ValueId v, const Idx& idx);

  // Emits the statements computing value v at idx into `code` and returns a register expression.
  std::string value(ir::ValueId v, const Idx& idx, std::string& code, const std::string& ind);
  // The index of take's operand x read at the take's idx (the index operand evaluated there).
  Idx take_index(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind);
  // The operand index of a view op (expand, permute, reshape, slice) read at idx.
  Idx view_index(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind);
  // Whether `chunk` consecutive elements along `axis` of v, starting at a multiple of `chunk` (and
  // within the axis), are consecutive in memory, v a buffer seen through views (address() is not
  // empty): the axis maps to the buffer's last axis with unit step through every permute, slice,
  // broadcast and reshape. False when that cannot be shown from the shapes; callers then check
  // each address at run time.
  bool axis_contiguous(ir::ValueId v, size_t axis, int64_t chunk) const;
  // Whether the address of v's element (v a buffer seen through views) is f(the other axes) +
  // g(axis): then address(i, k) = address(i, 0) + address(0, k) - address(0, 0), and a kernel
  // reading rows of v along `axis` computes each row's part once (no division per element read).
  // False where a merge (a division) or a gather mixes `axis` with the others.
  bool axis_separable(ir::ValueId v, size_t axis) const;
  // A `const T*` to v's element at idx when v is a buffer seen through views only, else "".
  std::string address(ir::ValueId v, const Idx& idx, std::string& code, const std::string& ind);
  // Declares the start of a slice along an axis of `extent` from the runtime value `raw_start`
  // (an index scalar), wrapped once and clamped so that `size` fits; returns its name.
  std::string dynamic_start(ir::ValueId raw_start, const ir::Dim& extent, const ir::Dim& size,
                            std::string& code, const std::string& ind);
  // The index of a view's (permute, reshape, slice without runtime starts) result that reads its
  // operand at x: the inverse of view_index. `inside` gets the conditions under which the view
  // reads that element at all (a slice keeps part of its operand).
  Idx view_result_index(const ir::Operation& op, const Idx& x, std::vector<std::string>& inside,
                        std::string& code, const std::string& ind);
  // The stores of the group's folded updates (FusionGroup::folded_updates) whose source is value
  // `stored`, just stored at `at` with `val`: each at its place in the update's region, where the
  // views keep that element.
  std::string folded_update_stores(ir::ValueId stored, const Idx& at, const std::string& val,
                                   const std::string& ind);
  // Computes op's (single) result at idx from its operands.
  std::string compute(const ir::Operation& op, const Idx& idx, std::string& code, const std::string& ind);
  std::string load(ir::ValueId v, const Idx& idx);
  std::string store(ir::ValueId v, const Idx& idx, const std::string& val);
  // Evaluates the group's epilogue for the core's result `core_val` (already rounded to its dtype)
  // at idx and stores the group's output; with `part`, that sibling product's epilogue and output
  // (FusionGroup::parts).
  std::string emit_output(const Idx& idx, const std::string& core_val, const std::string& ind,
                          const scheduler::FusionGroup* part = nullptr);
};

// Whether a static slice axis is known from the shapes to lie within an axis of `extent` (else
// its positions are tested where written).
bool slice_axis_fits(const ir::SliceAxis& sa, const ir::Dim& extent);

// Removes the unravels whose variables nothing else in `glue` reads. They are dead code NVRTC would
// drop anyway, but their text names dims (`t0 % p->shape[0][1]`), so without this two kernels that
// compile to the same machine code can differ in source and be built twice (kernels are
// deduplicated and cached by source text).
std::string prune_unused_unravels(std::string glue, const std::vector<Ctx::Unravel>& unravels);

// Matrix products with at most this many rows take the GEMV template (jit/kernels/gemv.cuh).
constexpr int kGemvMaxRows = 16;

// `extern "C" __global__ void __launch_bounds__(BOUNDS) name(const __grid_constant__ KParams kp) {`,
// `const KParams* const p = &kp;` and the predicate's early return (emit_kernels.cpp). `bounds`:
// the launch bounds' arguments (threads per block, and optionally the blocks per multiprocessor
// the register budget must allow).
// `prefetch`: the entry point requests KParams::prefetch into L2 (matrix products' tensor-core
// entries; jit/kernels/grid_dependency.cuh).
// `wait`: the entry waits for its predecessor (and checks its predicate) first; false where the
// body does (gemv.cuh, grape_gemv_wait).
std::string kernel_header(const std::string& name, const std::string& bounds = "256", bool prefetch = false,
                          bool wait = true);
// The kernel of a group whose core is a matmul/linear (emit_matmul.cpp) or a fused attention
// (emit_attention.cpp).
std::string matrix_product_kernel(Ctx& c, const std::string& name, LaunchRule& launch);
std::string attention_kernel(Ctx& c, const std::string& name, LaunchRule& launch);

// Kernel bodies (emit_kernels.cpp): the whole `extern "C" __global__` function text; in-place
// updates recorded in c.in_place_updates.
std::string emit_kernel_body(Ctx& c, const std::string& name, LaunchRule& launch);

}  // namespace grape::jit::detail
