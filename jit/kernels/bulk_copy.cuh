// The copy engine's bulk tensor copies from global into shared memory (cp.async.bulk.tensor,
// sm_90) and the shared-memory barrier (mbarrier) that counts their bytes. Why: an SM's ordinary loads come back
// in the order they were issued, so loads of a kernel's inputs issued after its weight's loads
// wait for the weight (bench/RESULTS.md, thirty-fourth session: 1.2 us of each decode GEMV's
// row statistics); bulk copies go through the copy engine instead, and land in shared memory.
// Compiled for an older target these are never called (callers check GRAPE_BULK_COPY).
#ifndef GRAPE_KERNELS_BULK_COPY_CUH
#define GRAPE_KERNELS_BULK_COPY_CUH

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define GRAPE_BULK_COPY 1

// grape_smem_addr: gemm_mma.cuh (included before this file wherever it is used).
// One thread: the barrier expects one arrival per phase. The fences make the initialisation
// visible to the copy engine (the async proxy) and, after the caller's __syncthreads, to the block.
__device__ __forceinline__ void grape_mbar_init(unsigned long long* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(grape_smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// One thread: the phase's arrival, and the bytes its copies will bring (the phase completes when
// all have landed).
__device__ __forceinline__ void grape_mbar_expect(unsigned long long* bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(grape_smem_addr(bar)),
               "r"(bytes)
               : "memory");
}
// One box of a 2-D tensor map (`map`: a CUtensorMap in global memory) at element coordinates (x,
// y) (x the contiguous one) to shared `dst` (aligned as the map's swizzle needs), counted on `bar`;
// elements outside the tensor arrive as zeros (and count).
__device__ __forceinline__ void grape_bulk_tensor_load_2d(void* dst, const void* map, int x, int y,
                                                          unsigned long long* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];" ::"r"(grape_smem_addr(dst)),
      "l"(map), "r"(x), "r"(y), "r"(grape_smem_addr(bar))
      : "memory");
}
// Every thread that reads the copied memory: until phase `parity` of `bar` has completed.
__device__ __forceinline__ void grape_mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile(
        "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\tselp.u32 %0, 1, 0, "
        "p;\n\t}"
        : "=r"(done)
        : "r"(grape_smem_addr(bar)), "r"(parity)
        : "memory");
}
// One thread, after every thread has waited: the barrier's memory may be used for anything again.
__device__ __forceinline__ void grape_mbar_inval(unsigned long long* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(grape_smem_addr(bar)) : "memory");
}
#endif

#endif  // GRAPE_KERNELS_BULK_COPY_CUH
