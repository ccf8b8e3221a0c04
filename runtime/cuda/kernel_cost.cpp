#include "runtime/cuda/kernel_cost.h"

#include <algorithm>

#include "ir/dtype.h"
#include "ir/op.h"

namespace grape::cuda {
namespace {

double elements(const ir::Type& t, const std::map<std::string, int64_t>& dims) {
  double n = 1;
  for (const ir::Dim& d : t.shape) n *= static_cast<double>(d.eval(dims));
  return n;
}

double bytes_of(const ir::Function& f, ir::ValueId v, const std::map<std::string, int64_t>& dims) {
  const ir::Type& t = f.type(v);
  return elements(t, dims) * static_cast<double>(dtype_size(t.dtype));
}

// The slice_update a kernel does in place into buffer `out` (KernelSpec::aliases), else null.
const ir::Operation* in_place_update(const jit::KernelSpec& k, size_t out) {
  for (const auto& [o, in] : k.aliases) {
    if (o != out) continue;
    for (const ir::Operation* op : k.ops)
      if (op->op == ir::Op::SliceUpdate && !op->results.empty() && op->results[0] == k.buffers[o]) return op;
  }
  return nullptr;
}

bool updated_in_place(const jit::KernelSpec& k, ir::ValueId v) {
  for (const auto& [o, in] : k.aliases)
    if (k.buffers.at(in) == v && in_place_update(k, o)) return true;
  return false;
}

}  // namespace

KernelCost kernel_cost(const ir::Function& f, const jit::KernelSpec& k,
                       const std::map<std::string, int64_t>& dims) {
  KernelCost c;
  for (size_t i = 0; i < k.num_inputs && i < k.buffers.size(); ++i) {
    const ir::ValueId v = k.buffers[i];
    // The buffer an in-place slice update writes into is not read.
    if (updated_in_place(k, v)) continue;
    const double whole = bytes_of(f, v, dims);
    double seen = 0;
    bool direct = false;
    for (const ir::Operation* op : k.ops) {
      if (std::find(op->operands.begin(), op->operands.end(), v) == op->operands.end()) continue;
      if (ir::fusion_pattern(op->op) == ir::FusionPattern::kView && !op->results.empty())
        seen += bytes_of(f, op->results[0], dims);
      else
        direct = true;
    }
    c.bytes += direct ? whole : std::min(whole, seen);
  }
  for (size_t i = k.num_inputs; i < k.buffers.size(); ++i) {
    // An in-place update writes its value's elements only.
    const ir::Operation* update = in_place_update(k, i);
    c.bytes += update && update->operands.size() > 1 ? bytes_of(f, update->operands[1], dims)
                                                     : bytes_of(f, k.buffers[i], dims);
  }
  for (const ir::Operation* op : k.ops) {
    if ((op->op != ir::Op::MatMul && op->op != ir::Op::Linear) || op->results.empty() || op->operands.empty())
      continue;
    const ir::Type& a = f.type(op->operands[0]);
    if (a.shape.empty()) continue;
    c.flops += 2.0 * elements(f.type(op->results[0]), dims) * static_cast<double>(a.shape.back().eval(dims));
  }
  return c;
}

}  // namespace grape::cuda
