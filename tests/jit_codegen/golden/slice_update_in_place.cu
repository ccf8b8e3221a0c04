#line 1 "generated"
// slice_update, 3 op(s)
struct Ops {
  struct Starts { long long ds1; };
  __device__ static Starts starts(const KParams* p) {
    const int v0 = grape_ld_i32(p->buf[2], 0LL);
    const long long ds1 = grape_dyn_start((long long)v0, 16LL, 1LL);
    return Starts{ds1};
  }
  struct At { long long r0, r1, r2, r3; };
  __device__ static long long n(const KParams*) { return (1LL * 4LL * 1LL * 8LL); }
  __device__ static At at(const KParams* p, const Starts& s, long long gi) {
    [[maybe_unused]] long long t0 = gi;
    [[maybe_unused]] const long long i1 = t0 % 8LL; t0 /= 8LL;
    [[maybe_unused]] const long long i2 = t0 % 1LL; t0 /= 1LL;
    [[maybe_unused]] const long long i3 = t0 % 4LL; t0 /= 4LL;
    return At{t0, i3, i2, i1};
  }
  __device__ static bool inside(const KParams* p, const Starts& s, const At& a) { return true && (s.ds1 + 1LL * a.r2) < 16LL; }
  __device__ static float value(const KParams* p, const At& a) {
    const float v3 = grape_ld_f16(p->buf[0], (a.r1) * 8LL + a.r3);
    const float v2 = grape_r_f16((v3 * __int_as_float(0x40000000)));
    return v2;
  }
  __device__ static void store(const KParams* p, const Starts& s, const At& a, float v) {
    grape_st_f16(p->buf[3], (p->extra[0] + ((((0LL + 1LL * a.r0)) * 4LL + (0LL + 1LL * a.r1)) * 16LL + (s.ds1 + 1LL * a.r2)) * 8LL + (0LL + 1LL * a.r3)), v);
  }
};

extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  GRAPE_RELEASE_AT_START();
  const Ops::Starts s = Ops::starts(p);
  const long long n = Ops::n(p);
  for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long long)gridDim.x * blockDim.x)
    grape_slice_update_in_place<Ops>(p, s, gi);
}
