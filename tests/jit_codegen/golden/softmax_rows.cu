#line 1 "generated"
// softmax, 3 op(s)
extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  if (p->pred && !*p->pred) return;
  __shared__ float sm[32];
  const long long rows = (p->shape[0][0] * p->shape[0][1]), cnt = (128LL);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    [[maybe_unused]] long long t0 = row;
    [[maybe_unused]] const long long i1 = t0 % p->shape[0][1]; t0 /= p->shape[0][1];
    float mx = -__int_as_float(0x7f800000);
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t2 = j;
      const float v1 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t2);
      const float v0 = (v1 * __int_as_float(0x3e000000));
      mx = grape_fmax_nan(mx, v0);
    }
    mx = grape_block_reduce(mx, GrapeMax(), sm);
    float sum = 0.0f;
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t3 = j;
      const float v4 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t3);
      const float v3 = (v4 * __int_as_float(0x3e000000));
      sum += expf(v3 - mx);
    }
    sum = grape_block_reduce(sum, GrapeAdd(), sm);
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t4 = j;
      const float v7 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t4);
      const float v6 = (v7 * __int_as_float(0x3e000000));
      grape_st_f32(p->buf[1], ((t0) * p->shape[0][1] + i1) * 128LL + t4, (expf(v6 - mx) / sum));
    }
  }
}
