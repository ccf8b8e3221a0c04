// CUDA C++ generation: one kernel per fusion group (scheduler/fusion.h), and the ahead-of-time
// compile of every kernel of a module with NVRTC (`grape compile FILE --arch sm_80,sm_90`).
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "jit/kernel_bundle.h"
#include "jit/kernel_spec.h"
#include "scheduler/fusion.h"

namespace grape::jit {

// One KernelSpec per group of `plan`, in plan order (function body first, then loop bodies).
// `prefix` makes the names unique within a module (the entry name by default).
std::vector<KernelSpec> emit_kernels(const ir::Function& f, const scheduler::FusionPlan& plan,
                                     const std::string& prefix = "");

struct CompileReport {
  struct Entry {
    std::string name;
    size_t kernels = 0;
    size_t sequences = 0;  // block sequences (scheduler/sequence.h), compiled as kernels too
  };
  std::vector<Entry> entries;
  std::vector<std::string> archs;
  size_t compiled = 0;       // (kernel, arch) pairs that compiled cleanly (identical sources compile once)
  size_t wide_compiled = 0;  // with a bundle: matrix products' wide variants, likewise
  size_t rows_compiled = 0;  // with a bundle: matrix products' row-count variants, likewise
  std::vector<std::string> errors;  // each names the entry, kernel, op and source location
  bool ok() const { return errors.empty(); }
};

// Emits and NVRTC-compiles every kernel of every entry for each arch ("sm_80", "sm_90"). A kernel
// that fails to compile or compiles with warnings is an error. `locate` turns a span into
// "file:line:col" (default: "line L:C").
// `extra_sources` (the executors' own kernels) are compiled for every arch too. With `bundle`,
// every distinct source that compiled cleanly is appended to it (for write_bundle,
// jit/kernel_bundle.h), and so are the matrix products' wide variants (wide_variant_source, for
// scheduler::gemm_wide_target(arch): the kernels a session builds at first use), and, for each
// count in `bundle_rows`, the row-count variant (rows_variant_source) of every matrix product whose
// row count is a runtime dim: the variants a session builds at the first bind with that count.
CompileReport compile_module(const ir::Module& m, const std::vector<std::string>& archs,
                             const std::function<std::string(Span)>& locate = nullptr,
                             std::vector<BundledKernel>* bundle = nullptr,
                             const std::vector<std::string>& extra_sources = {},
                             const std::vector<int64_t>& bundle_rows = {});

}  // namespace grape::jit
