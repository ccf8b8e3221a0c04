#line 1 "generated"
// gelu, 4 op(s)
extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  GRAPE_GRID_WAIT();
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  const long long n = (p->shape[0][0] * 64LL);
  for (long long gi = (long long)blockIdx.x * blockDim.x + threadIdx.x; gi < n; gi += (long long)gridDim.x * blockDim.x) {
    [[maybe_unused]] long long t0 = gi;
    [[maybe_unused]] const long long i1 = t0 % 64LL; t0 /= 64LL;
    const float v3 = grape_ld_f16(p->buf[0], (t0) * 64LL + i1);
    const float v2 = grape_r_f16((v3 * __int_as_float(0x40000000)));
    const float v5 = grape_ld_f16(p->buf[1], i1);
    const float v1 = grape_r_f16((v2 + v5));
    const float v0 = grape_r_f16(grape_gelu_tanh(v1));
    grape_st_f16(p->buf[2], (t0) * 64LL + i1, v0);
  }
}
