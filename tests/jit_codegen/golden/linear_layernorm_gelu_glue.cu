#line 1 "generated"
// gelu, 3 op(s)
struct Ops {
  typedef __half W;
  typedef __half T;
  static constexpr bool kRowStats = true;
  static constexpr bool kWKN = false;
  static constexpr bool kADirect = false;
  __device__ static long long R(const KParams* p) { return GRAPE_ROWS_OR(p->extra[0]); }
  __device__ static long long N(const KParams* p) { return 256LL; }
  __device__ static long long K(const KParams* p) { return 64LL; }
  __device__ static const W* w(const KParams* p) { return (const W*)p->buf[3]; }
  __device__ static const W* w_row(const KParams* p, long long n) {
    return w(p) + n * K(p);
  }
  __device__ static const T* a_ptr(const KParams* p) { return nullptr; }
  __device__ static float gx(const KParams* p, long long r, long long k) {
    const float v0 = grape_ldg_f16(p->buf[0], (r * 64LL + k));
    return v0;
  }
  __device__ static void row_stats(const KParams* p, long long r, long long K, float* s0, float* s1) {
    const int lane = threadIdx.x & 31;
    float xr[2];
#pragma unroll
    for (int t = 0; t < 2; ++t) {
      const long long k = lane + 32 * t;
      xr[t] = k < K ? gx(p, r, k) : 0.0f;
    }
    float mean = 0.0f;
#pragma unroll
    for (int t = 0; t < 2; ++t) if (lane + 32 * t < K) mean += xr[t];
    mean = grape_warp_sum(mean) / (float)K;
    float sq = 0.0f;
#pragma unroll
    for (int t = 0; t < 2; ++t) if (lane + 32 * t < K) { const float d = xr[t] - mean; sq += d * d; }
    sq = grape_warp_sum(sq);
    *s0 = mean;
    *s1 = 1.0f / sqrtf(sq / (float)K + 1e-05f);
  }
  __device__ static float a(const KParams* p, long long r, long long k, float s0, float s1) {
    const float v1 = grape_ldg_f16(p->buf[0], (r * 64LL + k));
    const float v2 = grape_ldg_f16(p->buf[1], k);
    const float v3 = grape_ldg_f16(p->buf[2], k);
    return grape_r_f16(((v1 - s0) * s1 * v2 + v3));
  }
  __device__ static const T* a_addr(const KParams*, long long, long long) { return nullptr; }
  static constexpr bool kAView = false;
  static constexpr bool kAViewRows = false;
  static constexpr bool kAViewSplit = false;
  static constexpr bool kAVec = true;
  __device__ static bool a_vec_ok(const KParams* p) { return true && (reinterpret_cast<unsigned long long>((const T*)p->buf[0]) & 15) == 0 && (reinterpret_cast<unsigned long long>((const T*)p->buf[1]) & 15) == 0 && (reinterpret_cast<unsigned long long>((const T*)p->buf[2]) & 15) == 0; }
  __device__ static void a_vec(const KParams* p, long long r, long long k, float s0, float s1, float* out) {
    float x[8];
    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>((const T*)p->buf[0] + r * 64LL + k)), x);
    float g[8];
    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>((const T*)p->buf[1] + k)), g);
    float b[8];
    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>((const T*)p->buf[2] + k)), b);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = grape_r_f16(((x[e] - s0) * s1 * g[e] + b[e]));
  }
  static constexpr int kParts = 1;
  __device__ static int part(long long) { return 0; }
  __device__ static long long part_begin(int) { return 0; }
  __device__ static void store(const KParams* p, long long r, long long n, float acc) {
    const float v4 = grape_ldg_f16(p->buf[4], n);
    acc = acc + v4;
    const float v5 = grape_r_f16(grape_gelu(grape_r_f16(acc)));
    grape_st_f16(p->buf[5], (r * 256LL + n), v5);
  }
  template <int P>
  __device__ static void store_in(const KParams* p, long long r, long long n, float acc) { store(p, r, n, acc); }
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
  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemm_mma<Ops, 128, 128, 2, 3>(p, item, grape_smem);
}
#endif
#endif
