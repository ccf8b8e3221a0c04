// The parameter block of every generated kernel: `extern "C" __global__ void k(const __grid_constant__
// KParams kp)` (passed by value; the kernel bodies read it through `const KParams* p = &kp`). One definition
// for both sides: the host includes this header (jit/kernel_spec.h) and every kernel source embeds its text
// (jit/embed.cmake), so the two layouts cannot drift apart. Include guards, not #pragma once: NVRTC sees this
// text inside the kernel's main file.
#ifndef GRAPE_JIT_KERNEL_ABI_H
#define GRAPE_JIT_KERNEL_ABI_H

#define GRAPE_KMAX_BUFFERS 16
#define GRAPE_KMAX_RANK 8
#define GRAPE_KMAX_EXTRA 8

#ifndef __CUDACC_RTC__
namespace grape::jit {
#endif

struct KParams {
  const unsigned char* pred;  // the kernel returns at once when non-null and *pred == 0
  void* buf[GRAPE_KMAX_BUFFERS];
  long long shape[GRAPE_KMAX_BUFFERS][GRAPE_KMAX_RANK];
  long long extra[GRAPE_KMAX_EXTRA];
  // Matrix products (jit/kernels/gemv.cuh, gemm_mma.cuh), chosen on the host per launch
  // (scheduler/launch.h): K splits and the K range of each, and a zero-initialised scratch area
  // (split-K counters, then fp32 partial sums). Attention (jit/kernels/attention.cuh): splits is
  // the number of query rows per block, kchunk non-zero when the scores stay in shared memory.
  void* scratch;
  long long splits;
  long long kchunk;
  // L2 prefetch (jit/kernels/grid_dependency.cuh): every kernel requests [prefetch, prefetch +
  // prefetch_bytes) as it starts; the executors set it to the weight of a later matrix product
  // (scheduler/prefetch.h), or leave 0 bytes.
  const void* prefetch;
  unsigned long long prefetch_bytes;
};

#ifndef __CUDACC_RTC__
}  // namespace grape::jit
#endif

#endif  // GRAPE_JIT_KERNEL_ABI_H
