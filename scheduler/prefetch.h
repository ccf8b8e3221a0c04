// Which kernel prefetches which matrix product's weight into L2 (KParams::prefetch, read by
// grape_prefetch_l2 in jit/kernels/grid_dependency.cuh before the kernel waits for its
// predecessor). A decode step's products read weights that no kernel writes, at a fraction of the
// memory's bandwidth (each is latency-bound, a few MB); requested one matrix product ahead, a
// weight streams into L2 while the product before it runs.
#ifndef GRAPE_SCHEDULER_PREFETCH_H
#define GRAPE_SCHEDULER_PREFETCH_H

#include <cstdint>
#include <vector>

#include "scheduler/plan.h"

namespace grape::scheduler {

enum class PrefetchMode {
  None,      // no kernel prefetches (nor has the call in its source)
  Previous,  // each product's weight is prefetched by the product before it in its step list
};

// GRAPE_PREFETCH=0|1 (None, Previous; read once); Previous by default.
PrefetchMode prefetch_mode();

// A weight larger than this is not prefetched: its later pieces would evict its earlier ones (and
// the weights of the products around it) before they are read. GPT-2's 77 MB lm_head; half of an
// H100's 50 MB L2.
constexpr uint64_t kPrefetchMaxBytes = 24ull << 20;

// Per kernel, the kernel whose weight it prefetches, or -1. `target[k]` says whether kernel k is a
// matrix product with a weight to prefetch (its size within kPrefetchMaxBytes). In each step list
// (the function body, each loop body, separately) with targets t1 < t2 < ... in step order:
// Previous has t(i) prefetch t(i+1) and, in a loop body, the last target prefetch the first for
// the next trip; only matrix products request anything (only their tensor-core entry points,
// jit/emit_kernels.cpp, and gemv_mma.cuh's body have the call). Kernels inside a predicated region are
// assigned like the others (a prefetch is a hint; a skipped one costs bandwidth only).
std::vector<int> plan_prefetches(const ExecPlan& plan, const std::vector<bool>& target, PrefetchMode mode);

}  // namespace grape::scheduler

#endif  // GRAPE_SCHEDULER_PREFETCH_H
