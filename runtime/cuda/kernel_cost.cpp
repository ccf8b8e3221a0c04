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

bool in_place_update(const jit::KernelSpec& k) { return k.root && k.root->op == ir::Op::SliceUpdate; }

}  // namespace

KernelCost kernel_cost(const ir::Function& f, const jit::KernelSpec& k,
                       const std::map<std::string, int64_t>& dims) {
  KernelCost c;
  for (size_t i = 0; i < k.num_inputs && i < k.buffers.size(); ++i) {
    const ir::ValueId v = k.buffers[i];
    // The buffer an in-place slice update writes into is not read.
    if (in_place_update(k) && v == k.root->operands[0]) continue;
    const double whole = bytes_of(f, v, dims);
    double seen = 0;
    bool direct = false;
    for (const ir::Operation* op : k.ops) {
      if (std::find(op->operands.begin(), op->operands.end(), v) == op->operands.end()) continue;
      if (op == k.root && in_place_update(k) && op->operands[0] == v) continue;
      if (ir::fusion_pattern(op->op) == ir::FusionPattern::kView && !op->results.empty())
        seen += bytes_of(f, op->results[0], dims);
      else
        direct = true;
    }
    c.bytes += direct ? whole : std::min(whole, seen);
  }
  for (size_t i = k.num_inputs; i < k.buffers.size(); ++i) {
    const ir::ValueId v = k.buffers[i];
    c.bytes += in_place_update(k) && k.root->operands.size() > 1 ? bytes_of(f, k.root->operands[1], dims)
                                                                 : bytes_of(f, v, dims);
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
