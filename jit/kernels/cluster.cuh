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
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
#else
  __syncthreads();
#endif
}
// The two halves of a cluster barrier, for work between them: the arrival (relaxed: it orders no
// memory access) and the wait (acquire). Every thread of every block calls both, in turn.
__device__ __forceinline__ void grape_cluster_arrive_relaxed() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void grape_cluster_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
#else
  __syncthreads();
#endif
}
// Stores v at `at` (an address in this block's shared memory) in the block of rank `rank`.
__device__ __forceinline__ void grape_st_cluster(float* at, unsigned rank, float v) {
#if __CUDA_ARCH__ >= 900
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"((unsigned)__cvta_generic_to_shared(at)), "r"(rank));
  asm volatile("st.shared::cluster.f32 [%0], %1;" ::"r"(remote), "f"(v) : "memory");
#endif
}
// Stores v at `at` (an address in this block's shared memory) in the block of rank `rank`, and
// counts its 4 bytes on that block's mbarrier at `bar` (this block's address of it): the receiver
// waits on its barrier, with no cluster barrier and no release fence on the sender's side.
__device__ __forceinline__ void grape_st_async_cluster(float* at, unsigned long long* bar, unsigned rank,
                                                       float v) {
#if __CUDA_ARCH__ >= 900
  unsigned remote, rbar;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"((unsigned)__cvta_generic_to_shared(at)), "r"(rank));
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(rbar)
               : "r"((unsigned)__cvta_generic_to_shared(bar)), "r"(rank));
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.f32 [%0], %1, [%2];" ::"r"(remote),
               "f"(v), "r"(rbar)
               : "memory");
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

// The 32-bit word at this block's shared-memory address `saddr`, in the block of rank `rank`.
__device__ __forceinline__ unsigned grape_ld_cluster_u32(unsigned saddr, unsigned rank) {
#if __CUDA_ARCH__ >= 900
  unsigned remote, v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(saddr), "r"(rank));
  asm volatile("ld.shared::cluster.u32 %0, [%1];" : "=r"(v) : "r"(remote) : "memory");
  return v;
#else
  return 0u;
#endif
}

// A value of each block of the cluster (thread 0's `mine`; S: 4 to 16 bytes, copied as words),
// combined in rank order: f(f(v_0, v_1), v_2) ..., so every block gets the same result whatever
// the timing. Every thread of every block calls it; each gets the result. The ranks' values are
// loaded at once by the first warp's lanes (at most 8 blocks a cluster, scheduler/launch.cpp).
template <class S, class F>
__device__ __forceinline__ S grape_cluster_combine(const S& mine, F f) {
  static_assert(sizeof(S) % 4 == 0 && sizeof(S) <= 16, "a cluster combines values of 4 to 16 bytes");
  constexpr int W = sizeof(S) / 4;
  __shared__ unsigned mine_w[W], all_w[W];
  const unsigned n = grape_cluster_size();
  if (threadIdx.x == 0) memcpy(mine_w, &mine, sizeof(S));
  grape_cluster_sync();
  if (threadIdx.x < 32) {
    const unsigned lane = threadIdx.x, s = (unsigned)__cvta_generic_to_shared(mine_w);
    unsigned w[W];
#pragma unroll
    for (int k = 0; k < W; ++k) w[k] = lane < n ? grape_ld_cluster_u32(s + 4 * k, lane) : 0u;
    auto from = [&](unsigned r) {
      unsigned x[W];
#pragma unroll
      for (int k = 0; k < W; ++k) x[k] = __shfl_sync(0xffffffffu, w[k], r);
      S v;
      memcpy(&v, x, sizeof(S));
      return v;
    };
    S acc = from(0);
    for (unsigned r = 1; r < n; ++r) acc = f(acc, from(r));
    if (lane == 0) memcpy(all_w, &acc, sizeof(S));
  }
  // All reads of mine_w done before any block writes it again or leaves; all_w seen by the block.
  grape_cluster_sync();
  S out;
  memcpy(&out, all_w, sizeof(S));
  return out;
}

// The rows of a row kernel (row_norm.cuh, reduce.cuh): f(row, rank, nc) for row blockIdx.x / nc,
// then every gridDim.x / nc-th, nc the blocks of this launch's clusters (1 without; the grid is a
// multiple of it) and rank this block's place in its cluster. Every block of a cluster takes the
// same rows, so their cluster barriers pair up.
template <class F>
__device__ __forceinline__ void grape_cluster_rows(long long rows, F f) {
  const unsigned nc = grape_cluster_size(), rank = grape_cluster_rank();
  for (long long row = blockIdx.x / nc; row < rows; row += gridDim.x / nc) f(row, rank, nc);
}

#endif  // GRAPE_KERNELS_CLUSTER_CUH
