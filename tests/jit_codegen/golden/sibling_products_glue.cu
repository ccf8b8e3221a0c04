#line 1 "generated"
// linear, 5 op(s)
struct Ops {
  typedef __half W;
  typedef __half T;
  static constexpr bool kRowStats = false;
  static constexpr bool kWKN = false;
  static constexpr bool kADirect = true;
  __device__ static long long R(const KParams* p) { return GRAPE_ROWS_OR(p->extra[0]); }
  __device__ static long long N(const KParams* p) { return 360LL; }
  __device__ static long long K(const KParams* p) { return 128LL; }
  __device__ static const W* w(const KParams* p) { return (const W*)p->buf[1]; }
  __device__ static const W* w_row(const KParams* p, long long n) {
    if (n < 64LL) return (const W*)p->buf[1] + (n - 0LL) * K(p);
    if (n < 264LL) return (const W*)p->buf[3] + (n - 64LL) * K(p);
    return (const W*)p->buf[4] + (n - 264LL) * K(p);
  }
  __device__ static const T* a_ptr(const KParams* p) { return (const T*)p->buf[0]; }
  __device__ static float a(const KParams* p, long long r, long long k, float, float) {
    const float v0 = grape_ldg_f16(p->buf[0], (r * 128LL + k));
    return v0;
  }
  __device__ static void row_stats(const KParams*, long long, long long, float*, float*) {}
  __device__ static const T* a_addr(const KParams*, long long, long long) { return nullptr; }
  static constexpr bool kAView = false;
  static constexpr bool kAViewRows = false;
  static constexpr bool kAViewSplit = false;
  static constexpr bool kAVec = true;
  __device__ static bool a_vec_ok(const KParams* p) { return true && (reinterpret_cast<unsigned long long>((const T*)p->buf[0]) & 15) == 0; }
  __device__ static void a_vec(const KParams* p, long long r, long long k, float s0, float s1, float* out) {
    float x[8];
    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>((const T*)p->buf[0] + r * 128LL + k)), x);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = x[e];
  }
  static constexpr int kParts = 3;
  __device__ static int part(long long col) {
    if (col < 64LL) return 0;
    if (col < 264LL) return 1;
    return 2;
  }
  __device__ static long long part_begin(int i) {
    if (i == 0) return 0LL;
    if (i == 1) return 64LL;
    return 264LL;
  }
  template <int P>
  __device__ static void store_in(const KParams* p, long long r, long long n, float acc) {
    if constexpr (P == 0) {
      const float v1 = grape_ldg_f16(p->buf[2], n);
      acc = acc + v1;
      grape_st_f16(p->buf[7], (r * 64LL + n), grape_r_f16(acc));
    } else if constexpr (P == 1) {
      const float v2 = grape_r_f16(grape_gelu(grape_r_f16(acc)));
      grape_st_f16(p->buf[8], (r * 200LL + n), v2);
    } else {
      const float v3 = grape_ldg_f16(p->buf[5], n);
      acc = acc + v3;
      const float v5 = grape_ldg_f16(p->buf[6], (r * 96LL + n));
      const float v4 = grape_r_f16((grape_r_f16(acc) + v5));
      grape_st_f16(p->buf[9], (r * 96LL + n), v4);
    }
  }
  __device__ static void store(const KParams* p, long long r, long long col, float acc) {
    if (col < 64LL) return store_in<0>(p, r, col - 0LL, acc);
    if (col < 264LL) return store_in<1>(p, r, col - 64LL, acc);
    store_in<2>(p, r, col - 264LL, acc);
  }
  static constexpr bool kWeightBeforeWait = true;
  static constexpr bool kTriggerAfterWeight = true;
  static constexpr bool kWeightTma = true;
  static constexpr bool kAsyncExchange = true;
};

extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  extern __shared__ __align__(16) unsigned char grape_smem[];
  const long long items = ((Ops::N(p) + GRAPE_GEMV_NK_TILE - 1) / GRAPE_GEMV_NK_TILE) * p->splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemv_nk<Ops>(p, item, grape_smem);
}

#ifndef GRAPE_ROWS
extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel_mma(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);
  extern __shared__ __align__(16) unsigned char grape_smem[];
  const long long items = ((Ops::R(p) + 63) / 64) * ((Ops::N(p) + 63) / 64) * p->splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 64, 64, 2, 4>(p, item, grape_smem);
}

#ifdef GRAPE_GEMM_WIDE
extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel_wide(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);
  extern __shared__ __align__(16) unsigned char grape_smem[];
  const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 127) / 128) * p->splits;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  if (Ops::K(p) % 8 == 0) {
    for (long long item = blockIdx.x; item < items; item += gridDim.x)
      grape_gemm_wgmma<Ops, 128>(p, item, grape_smem);
    return;
  }
#endif
  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 128, 128, 2, 3>(p, item, grape_smem);
}
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel_wgmma64(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);
  extern __shared__ __align__(16) unsigned char grape_smem[];
  if (Ops::K(p) % 8 == 0) {
    const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 63) / 64) * p->splits;
    for (long long item = blockIdx.x; item < items; item += gridDim.x)
      grape_gemm_wgmma<Ops, 64, 4>(p, item, grape_smem);
    return;
  }
  const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 63) / 64) * p->splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x)
    grape_gemm_mma<Ops, 128, 64, 2, 3>(p, item, grape_smem);
}
extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel_wgmma96(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);
  extern __shared__ __align__(16) unsigned char grape_smem[];
  if (Ops::K(p) % 8 == 0) {
    const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 95) / 96) * p->splits;
    for (long long item = blockIdx.x; item < items; item += gridDim.x)
      grape_gemm_wgmma<Ops, 96>(p, item, grape_smem);
    return;
  }
  const long long items = ((Ops::R(p) + 127) / 128) * ((Ops::N(p) + 63) / 64) * p->splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x)
    grape_gemm_mma<Ops, 128, 64, 2, 3>(p, item, grape_smem);
}
extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel_wgmma_m64(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  grape_prefetch_l2(kp.prefetch, kp.prefetch_bytes);
  extern __shared__ __align__(16) unsigned char grape_smem[];
  {
    if (Ops::K(p) % 8 != 0) __trap();
    const long long items = ((Ops::R(p) + 63) / 64) * ((Ops::N(p) + 63) / 64) * p->splits;
    for (long long item = blockIdx.x; item < items; item += gridDim.x)
      grape_gemm_wgmma<Ops, 64, 8, 64>(p, item, grape_smem);
    return;
  }
}
#endif
#endif
#endif
