// The source of one persistent kernel that runs a whole straight list of steps (the mono executor,
// runtime/cuda/mono_executor.h; architecture.md, "Executors"). Every generated kernel's entry point
// is a grid-stride loop over its work items calling a `__device__` body (issue 7 item 2), so any
// grid runs it correctly: the persistent kernel turns the entry point each step's bound launch
// would call into a device function of the same code, and calls them in step order in one launch
// of co-resident blocks, with a grid-wide barrier wherever a step touches memory an earlier step
// of the same phase writes (or writes what it reads). Copies are done by the whole grid.
//
// Loads in a persistent kernel: a step may read what an earlier step of the same launch wrote, which
// the read-only data path (ld.global.nc) does not promise to see, so GRAPE_PERSISTENT makes the
// prelude's grape_ldg_* and the templates' read-only loads plain loads, and the glue's __ldg calls
// become grape_ld_plain. The barrier's acquire makes the other blocks' writes visible.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "jit/kernel_spec.h"

namespace grape::jit {

constexpr const char* kPersistentSymbol = "grape_persistent";
// The kernel's __launch_bounds__ asks for this many blocks per multiprocessor (so at most
// 65536 / (threads * 2) registers a thread), as the matrix products' own kernels do: a persistent
// kernel of one block per multiprocessor (255 registers) had too few loads in flight (run 146).
constexpr int kPersistentBlocksPerSm = 2;

struct PersistentStep {
  enum class Kind { Launch, Copy } kind = Kind::Launch;
  size_t index = 0;             // Launch: the kernel (and its parameter-block slot); Copy: its table slot
  std::string entry;            // Launch: the entry point its bound launch runs (kKernelSymbol + suffix)
  bool barrier_before = false;  // a grid-wide barrier between the previous step and this one
  long long rows = 0;           // Launch: the row count its body is specialised for (kRowsDefine), or 0
};

// The glue of a kernel source (after the templates) with entry point `symbol` as
// `__device__ void grape_entry(const KParams& kp)`, the other entry points left out; "" when the
// glue is not in the shape this expects (then the kernel cannot run in a persistent kernel).
// `rows` > 0: the body of the row-count variant for that many rows (GRAPE_ROWS_OR(x) becomes
// GRAPE_ROWS_AS(rows, x): one persistent source holds bodies of several row counts).
std::string persistent_entry(const std::string& source, const std::string& symbol, long long rows = 0);

// The whole persistent kernel (kPersistentSymbol, PersistentParams of jit/kernel_abi.h) of `threads`
// threads a block. Identical entries (the same layer repeated) are emitted once. Throws
// std::invalid_argument naming the kernel whose entry cannot be converted.
std::string persistent_kernel_source(const std::vector<PersistentStep>& steps,
                                     const std::vector<KernelSpec>& specs, int threads);

}  // namespace grape::jit
