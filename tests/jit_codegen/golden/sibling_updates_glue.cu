#line 1 "generated"
// slice_update, 8 op(s)
struct Ops0 {
  struct Starts { long long ds1; };
  __device__ static Starts starts(const KParams* p) {
    const int v0 = grape_ld_i32(p->buf[2], 0LL);
    const long long ds1 = grape_dyn_start((long long)v0, 16LL, 1LL);
    return Starts{ds1};
  }
  struct At { long long r0, r1, r2, r3, r4; };
  __device__ static long long n(const KParams* p) { return (1LL * p->shape[0][0] * 4LL * 1LL * 8LL); }
  __device__ static At at(const KParams* p, const Starts& s, long long gi) {
    [[maybe_unused]] long long t0 = gi;
    [[maybe_unused]] const long long i1 = t0 % 8LL; t0 /= 8LL;
    [[maybe_unused]] const long long i2 = t0 % 1LL; t0 /= 1LL;
    [[maybe_unused]] const long long i3 = t0 % 4LL; t0 /= 4LL;
    [[maybe_unused]] const long long i4 = t0 % p->shape[0][0]; t0 /= p->shape[0][0];
    return At{t0, i4, i3, i2, i1};
  }
  __device__ static bool inside(const KParams* p, const Starts& s, const At& a) { return true && (0LL + 1LL * a.r1) < p->shape[0][0] && (s.ds1 + 1LL * a.r3) < 16LL; }
  __device__ static float value(const KParams* p, const At& a) {
    const float v4 = grape_ld_f16(p->buf[0], ((0LL + 1LL * (a.r1))) * 64LL + (0LL + 1LL * ((a.r2) * 8LL + a.r4)));
    return v4;
  }
  __device__ static void store(const KParams* p, const Starts& s, const At& a, float v) {
    grape_st_f16(p->buf[4], (p->extra[0] + (((((0LL + 1LL * a.r0)) * p->shape[0][0] + (0LL + 1LL * a.r1)) * 4LL + (0LL + 1LL * a.r2)) * 16LL + (s.ds1 + 1LL * a.r3)) * 8LL + (0LL + 1LL * a.r4)), v);
  }
};

struct Ops1 {
  struct Starts { long long ds6; };
  __device__ static Starts starts(const KParams* p) {
    const int v5 = grape_ld_i32(p->buf[2], 0LL);
    const long long ds6 = grape_dyn_start((long long)v5, 16LL, 1LL);
    return Starts{ds6};
  }
  struct At { long long r0, r1, r2, r3, r4; };
  __device__ static long long n(const KParams* p) { return (1LL * p->shape[0][0] * 4LL * 1LL * 8LL); }
  __device__ static At at(const KParams* p, const Starts& s, long long gi) {
    [[maybe_unused]] long long t5 = gi;
    [[maybe_unused]] const long long i6 = t5 % 8LL; t5 /= 8LL;
    [[maybe_unused]] const long long i7 = t5 % 1LL; t5 /= 1LL;
    [[maybe_unused]] const long long i8 = t5 % 4LL; t5 /= 4LL;
    [[maybe_unused]] const long long i9 = t5 % p->shape[0][0]; t5 /= p->shape[0][0];
    return At{t5, i9, i8, i7, i6};
  }
  __device__ static bool inside(const KParams* p, const Starts& s, const At& a) { return true && (0LL + 1LL * a.r1) < p->shape[0][0] && (s.ds6 + 1LL * a.r3) < 16LL; }
  __device__ static float value(const KParams* p, const At& a) {
    const float v10 = grape_ld_f16(p->buf[0], ((0LL + 1LL * (a.r1))) * 64LL + (32LL + 1LL * ((a.r2) * 8LL + a.r4)));
    const float v7 = grape_r_f16((v10 * __int_as_float(0x40000000)));
    return v7;
  }
  __device__ static void store(const KParams* p, const Starts& s, const At& a, float v) {
    grape_st_f16(p->buf[5], (p->extra[0] + (((((0LL + 1LL * a.r0)) * p->shape[0][0] + (0LL + 1LL * a.r1)) * 4LL + (0LL + 1LL * a.r2)) * 16LL + (s.ds6 + 1LL * a.r3)) * 8LL + (0LL + 1LL * a.r4)), v);
  }
};

extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  GRAPE_RELEASE_AT_START();
  const Ops0::Starts s0 = Ops0::starts(p);
  const long long n0 = Ops0::n(p);
  const Ops1::Starts s1 = Ops1::starts(p);
  const long long n1 = Ops1::n(p);
  const long long b1 = n0;
  const long long n = b1 + n1;
  for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long long)gridDim.x * blockDim.x) {
    if (gi < n0) grape_slice_update_in_place<Ops0>(p, s0, gi);
    else grape_slice_update_in_place<Ops1>(p, s1, gi - b1);
  }
}
