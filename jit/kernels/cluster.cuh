// Thread-block clusters (sm_90; scheduler: LaunchDims::cluster): the blocks of a cluster run at
// once on one GPU processing cluster and read each other's shared memory. gemm_wgmma.cuh's K splits
// add their partial tiles that way; row_norm.cuh spreads a long row over the blocks of a cluster.
// Compiled for an older target, a launch has no clusters: size 1, rank 0, and the rest is never
// called.
#ifndef GRAPE_KERNELS_CLUSTER_CUH
#define GRAPE_KERNELS_CLUSTER_CUH

__device__ __forceinline__ unsigned grape_cluster_size() {
#if __CUDA_ARCH__ >= 900
  unsigned n;
  asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
#else
  return 1;
#endif
}
__device__ __forceinline__ unsigned grape_cluster_rank() {
#if __CUDA_ARCH__ >= 900
  unsigned r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
#else
  return 0;
#endif
}
// Every thread of every block of the cluster; the release/acquire pair orders the shared-memory
// writes before the barrier with the other blocks' reads after it.
__device__ __forceinline__ void grape_cluster_sync() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
  __syncthreads();
#endif
}
// The float at this block's shared-memory address `saddr`, in the block of rank `rank`.
__device__ __forceinline__ float grape_ld_cluster(unsigned saddr, unsigned rank) {
#if __CUDA_ARCH__ >= 900
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(saddr), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
#else
  return 0.0f;
#endif
}

// Two statistics of each block of the cluster, combined in rank order: f(&a, &b, a_r, b_r) for
// r = 1 .. size - 1 onto block 0's, so every block gets the same result whatever the timing.
// Every thread of every block calls it; each gets the result. The ranks' values are loaded at
// once by the first warp's lanes (the cluster has at most 8 blocks, scheduler/launch.cpp).
template <class F>
__device__ __forceinline__ void grape_cluster_combine2(float* a, float* b, F f) {
  __shared__ float mine[2], all[2];
  const unsigned n = grape_cluster_size();
  if (threadIdx.x == 0) {
    mine[0] = *a;
    mine[1] = *b;
  }
  grape_cluster_sync();
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x, s = (unsigned)__cvta_generic_to_shared(mine);
    float ra = 0.0f, rb = 0.0f;
    if (lane < n) {
      ra = grape_ld_cluster(s, lane);
      rb = grape_ld_cluster(s + 4, lane);
    }
    float xa = __shfl_sync(0xffffffffu, ra, 0), xb = __shfl_sync(0xffffffffu, rb, 0);
    for (unsigned r = 1; r < n; ++r) f(&xa, &xb, __shfl_sync(0xffffffffu, ra, r), __shfl_sync(0xffffffffu, rb, r));
    if (lane == 0) {
      all[0] = xa;
      all[1] = xb;
    }
  }
  // All reads of `mine` done before any block writes it again or leaves; `all` seen by the block.
  grape_cluster_sync();
  *a = all[0];
  *b = all[1];
}

#endif  // GRAPE_KERNELS_CLUSTER_CUH
