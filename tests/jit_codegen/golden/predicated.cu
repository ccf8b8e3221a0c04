#line 1 "generated"
// add, 3 op(s)
extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  const long long n = (128LL);
  for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long long)gridDim.x * blockDim.x) {
    [[maybe_unused]] long long t0 = gi;
    const float v2 = grape_ld_f32(p->buf[0], t0);
    const float v1 = expf(v2);
    const float v0 = (v1 + __int_as_float(0x3f800000));
    grape_st_f32(p->buf[1], t0, v0);
  }
}
