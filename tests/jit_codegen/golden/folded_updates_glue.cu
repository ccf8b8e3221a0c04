#line 1 "generated"
// matmul, 11 op(s)
struct Ops {
  typedef __half W;
  typedef __half T;
  static constexpr bool kRowStats = false;
  static constexpr bool kWKN = true;
  static constexpr bool kADirect = true;
  __device__ static long long R(const KParams* p) { return GRAPE_ROWS_OR(p->extra[0]); }
  __device__ static long long N(const KParams* p) { return 2304LL; }
  __device__ static long long K(const KParams* p) { return 768LL; }
  __device__ static const W* w(const KParams* p) { return (const W*)p->buf[1]; }
  __device__ static const W* w_row(const KParams* p, long long n) {
    return w(p) + n * K(p);
  }
  __device__ static const T* a_ptr(const KParams* p) { return (const T*)p->buf[0]; }
  __device__ static float a(const KParams* p, long long r, long long k, float, float) {
    const float v0 = grape_ldg_f16(p->buf[0], (r * 768LL + k));
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
    GrapeVec<T>::unpack(__ldg(reinterpret_cast<const uint4*>((const T*)p->buf[0] + r * 768LL + k)), x);
#pragma unroll
    for (int e = 0; e < 8; ++e) out[e] = x[e];
  }
  static constexpr int kParts = 1;
  __device__ static int part(long long) { return 0; }
  __device__ static long long part_begin(int) { return 0; }
  __device__ static void store(const KParams* p, long long r, long long n, float acc) {
    [[maybe_unused]] long long t2 = r;
    [[maybe_unused]] const long long i3 = t2 % 1LL; t2 /= 1LL;
    grape_st_f16(p->buf[5], (r * 2304LL + n), grape_r_f16(acc));
    const float fu1 = grape_r_f16(acc);
    [[maybe_unused]] long long t4 = (n - 768LL);
    [[maybe_unused]] const long long i5 = t4 % 64LL; t4 /= 64LL;
    const int v2 = grape_ldg_i32(p->buf[3], 0LL);
    const long long ds3 = grape_dyn_start((long long)v2, 16LL, 1LL);
    if ((n - 768LL) >= 0 && (n - 768LL) < 768LL && (i3) == 0LL && (0LL + 1LL * (t2)) < p->shape[0][0] && (ds3 + 1LL * 0LL) < 16LL) grape_st_f16(p->buf[6], (p->extra[1] + (((((0LL + 1LL * 0LL)) * p->shape[0][0] + (0LL + 1LL * (t2))) * 12LL + (0LL + 1LL * t4)) * 16LL + (ds3 + 1LL * 0LL)) * 64LL + (0LL + 1LL * i5)), fu1);
    [[maybe_unused]] long long t6 = (n - 1536LL);
    [[maybe_unused]] const long long i7 = t6 % 64LL; t6 /= 64LL;
    const int v4 = grape_ldg_i32(p->buf[3], 0LL);
    const long long ds5 = grape_dyn_start((long long)v4, 16LL, 1LL);
    if ((n - 1536LL) >= 0 && (n - 1536LL) < 768LL && (i3) == 0LL && (0LL + 1LL * (t2)) < p->shape[0][0] && (ds5 + 1LL * 0LL) < 16LL) grape_st_f16(p->buf[7], (p->extra[1] + (((((0LL + 1LL * 0LL)) * p->shape[0][0] + (0LL + 1LL * (t2))) * 12LL + (0LL + 1LL * t6)) * 16LL + (ds5 + 1LL * 0LL)) * 64LL + (0LL + 1LL * i7)), fu1);
  }
  template <int P>
  __device__ static void store_in(const KParams* p, long long r, long long n, float acc) { store(p, r, n, acc); }
  static constexpr bool kWeightBeforeWait = false;
  static constexpr bool kTriggerAfterWeight = true;
  static constexpr bool kWeightTma = true;
  static constexpr bool kAsyncExchange = true;
};

extern "C" __global__ void __launch_bounds__(256, 2) grape_kernel(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  extern __shared__ __align__(16) unsigned char grape_smem[];
  const long long items = ((Ops::N(p) + GRAPE_GEMV_MMA_TILE - 1) / GRAPE_GEMV_MMA_TILE) * p->splits;
  for (long long item = blockIdx.x; item < items; item += gridDim.x) grape_gemv_kn_mma<Ops>(p, item, grape_smem);
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
