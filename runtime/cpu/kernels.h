// CPU reference kernels: one function evaluates any non-control-flow IR op on concrete tensors.
// These are the numerical oracle of Grape: simple loops, f16/bf16 computed in f32 and rounded on
// store, sums and dot products accumulated in double. All symbolic attributes are already resolved
// to integers by the caller (the executor or the test interpreter).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/op.h"
#include "runtime/tensor.h"

namespace grape::cpu {

// One axis of a slice, fully resolved: elements start, start+step, ... (size of them) are taken.
// `squeeze` drops the axis from the result (an integer index; size is then 1).
struct SliceSpec {
  int64_t start = 0;
  int64_t size = 0;
  int64_t step = 1;
  bool squeeze = false;
};

struct KernelAttrs {
  DType dtype = DType::F32;  // Cast, Full, Constant, Arange, OneHot: the result dtype
  double value = 0;          // Full, Constant: the fill value for float dtypes
  int64_t ivalue = 0;        // Full, Constant: the fill value for i32/i64/bool (exact)
  std::vector<int64_t> axes; // Sum..All/Any: reduced axes (non-negative, sorted, unique);
                             // Permute: the permutation
  int64_t axis = 0;          // ArgMax/ArgMin, Softmax, LogSoftmax, Concat, Take, TakeAlongAxis,
                             // TopK, CumSum (non-negative)
  int64_t k = 0;             // TopK: k; OneHot: number of classes
  bool keepdims = false;     // reductions
  double eps = 1e-5;         // LayerNorm, RmsNorm
  bool approx_tanh = false;  // Gelu: tanh approximation instead of erf
  Shape shape;               // Full, Reshape, Expand: result shape; Arange: {n};
                             // CausalMask: {S, T}
  std::vector<SliceSpec> slices;  // Slice, SliceUpdate: one per axis of inputs[0]
};

// Thrown for inputs a kernel cannot handle (mismatched shapes, out-of-range attributes). The
// front end's checks make these internal errors for well-typed programs.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Evaluates `op` and returns its results (TopK returns {values, indices}; every other op one
// tensor). For Slice and SliceUpdate only inputs[0] (and inputs[1], the value written) are read;
// dynamic start operands are resolved by the caller into `attrs.slices`. Param, Weight,
// StateRead, StateWrite, Select and Loop are not kernels (the executor handles them).
std::vector<Tensor> run_kernel(ir::Op op, const std::vector<Tensor>& inputs, const KernelAttrs& attrs);

// The start of a dynamic slice: a device index `raw` (negative counts from the end) into an axis
// of length `dim`, clamped so that `size` elements fit (as jax.lax.dynamic_slice does).
int64_t resolve_dynamic_start(int64_t raw, int64_t dim, int64_t size);

// NumPy broadcasting of two shapes; throws KernelError if incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b);

}  // namespace grape::cpu
