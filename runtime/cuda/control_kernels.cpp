#include "runtime/cuda/control_kernels.h"

#include <string>
#include <vector>

#include "jit/kernel_cache.h"
#include "jit/kernel_source.h"
#include "jit/parallel_compile.h"
#include "scheduler/launch.h"

namespace grape::cuda {

// NVRTC does not declare cudaGraphSetConditional. Declaring it ourselves as a cudart builtin is
// enough: the module loads with cuModuleLoadData and sets the handle, with no toolkit header at
// run time and no device-runtime library to link (measured: docs/execution.md).
std::string control_kernels_source() {
  return std::string(scheduler::launch_dependents_early() ? "#define GRAPE_PDL_EARLY 1\n" : "") +
         jit::embedded_file("grid_dependency.cuh") + R"(typedef unsigned long long cudaGraphConditionalHandle;
extern "C" __device__ __attribute__((cudart_builtin)) void cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int);

// GRAPE_GRID_WAIT (jit/kernels/grid_dependency.cuh): these kernels sit between generated ones in
// the graph executor's chains of programmatic edges, so they wait for their predecessor first too.
#ifdef GRAPE_PDL_EARLY
#define GRAPE_GRID_DEPENDENCY() GRAPE_GRID_WAIT(); GRAPE_LAUNCH_DEPENDENTS()
#else
#define GRAPE_GRID_DEPENDENCY() GRAPE_GRID_WAIT()
#endif

struct alignas(16) GrapeWord {
  unsigned long long lo, hi;
};

extern "C" __global__ void grape_copy(unsigned char* dst, const unsigned char* src, unsigned long long bytes,
                                      const unsigned char* pred) {
  GRAPE_GRID_DEPENDENCY();
  if (pred && !*pred) return;
  unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  if ((((unsigned long long)dst | (unsigned long long)src) & 15) == 0) {
    unsigned long long words = bytes / 16;
    for (unsigned long long w = i; w < words; w += stride) ((GrapeWord*)dst)[w] = ((const GrapeWord*)src)[w];
    for (unsigned long long b = words * 16 + i; b < bytes; b += stride) dst[b] = src[b];
  } else {
    for (unsigned long long b = i; b < bytes; b += stride) dst[b] = src[b];
  }
}

extern "C" __global__ void grape_loop_enter(cudaGraphConditionalHandle h, const unsigned char* cond,
                                            unsigned long long* trips, long long max) {
  GRAPE_GRID_DEPENDENCY();
  *trips = 0;
  cudaGraphSetConditional(h, (*cond != 0 && max != 0) ? 1u : 0u);
}

extern "C" __global__ void grape_loop_next(cudaGraphConditionalHandle h, const unsigned char* cond,
                                           unsigned long long* trips, long long max, unsigned int* capped) {
  GRAPE_GRID_DEPENDENCY();
  unsigned long long t = ++*trips;
  bool go = *cond != 0;
  if (max >= 0) {
    go = go && t < (unsigned long long)max;
  } else if (go && t >= (unsigned long long)(-max)) {
    *capped = 1;
    go = false;
  }
  cudaGraphSetConditional(h, go ? 1u : 0u);
}

extern "C" __global__ void grape_commit_gate(cudaGraphConditionalHandle h, const unsigned int* capped,
                                             unsigned int loops, unsigned int stride) {
  GRAPE_GRID_DEPENDENCY();
  unsigned int any = 0;
  for (unsigned int i = 0; i < loops; ++i) any |= capped[i * stride];
  cudaGraphSetConditional(h, any ? 0u : 1u);
}

extern "C" __global__ void grape_if_gate(cudaGraphConditionalHandle h, const unsigned char* pred) {
  GRAPE_GRID_DEPENDENCY();
  cudaGraphSetConditional(h, *pred != 0 ? 1u : 0u);
}
)";
}

ControlKernels load_control_kernels(const jit::Device& device) {
  jit::KernelCache cache = jit::KernelCache::open_default();
  std::vector<jit::CompileOutcome> built =
      jit::compile_parallel({{control_kernels_source(), "grape_control"}}, device.arch(), &cache, 1);
  if (built[0].failure) std::rethrow_exception(built[0].failure);
  const jit::CompileResult& r = built[0].result;
  const void* image = r.cubin.empty() ? static_cast<const void*>(r.ptx.c_str()) : r.cubin.data();
  ControlKernels k;
  k.module = jit::Module(device, image, "the executors' control kernels");
  k.copy = k.module.function("grape_copy");
  k.loop_enter = k.module.function("grape_loop_enter");
  k.loop_next = k.module.function("grape_loop_next");
  k.commit_gate = k.module.function("grape_commit_gate");
  k.if_gate = k.module.function("grape_if_gate");
  return k;
}

}  // namespace grape::cuda
