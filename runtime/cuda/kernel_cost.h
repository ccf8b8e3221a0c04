// What one launch of a generated kernel moves and computes, from the program's shapes at the
// bound dims: the figures `grape bench --profile` divides by each kernel's measured time.
//   bytes: every input buffer as the kernel's ops read it — a buffer seen only through views
//          (a slice of the KV cache, a head split) counts the views' sizes, at most the buffer's —
//          plus every output written (an in-place slice update: the slice, not the whole buffer).
//          Reads the caches serve still count: this is traffic the kernel asks for, not DRAM bytes.
//   flops: 2 * M * N * K for every matrix product among the kernel's ops (matmul, linear); other
//          ops are not counted (a kernel of elementwise and row ops reports 0).
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "ir/ir.h"
#include "jit/kernel_spec.h"

namespace grape::cuda {

struct KernelCost {
  double bytes = 0;
  double flops = 0;
};

KernelCost kernel_cost(const ir::Function& f, const jit::KernelSpec& k,
                       const std::map<std::string, int64_t>& dims);

}  // namespace grape::cuda
