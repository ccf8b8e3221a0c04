#line 1 "generated"
// softmax, 3 op(s)
extern "C" __global__ void __launch_bounds__(256) grape_kernel(const __grid_constant__ KParams kp) {
  const KParams* const p = &kp;
  __shared__ float sm[32];
  const long long rows = (p->shape[0][0] * p->shape[0][1]), cnt = (128LL);
  for (long long row = blockIdx.x; row < rows; row += gridDim.x) {
    [[maybe_unused]] long long t0 = row;
    [[maybe_unused]] const long long i1 = t0 % p->shape[0][1]; t0 /= p->shape[0][1];
    float mx = -__int_as_float(0x7f800000);
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t2 = j;
      const float v4 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t2);
      const float v3 = (v4 * __int_as_float(0x3e000000));
      mx = grape_fmax_nan(mx, v3);
    }
    mx = grape_block_reduce(mx, GrapeMax(), sm);
    float sum = 0.0f;
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t6 = j;
      const float v8 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t6);
      const float v7 = (v8 * __int_as_float(0x3e000000));
      sum += expf(v7 - mx);
    }
    sum = grape_block_reduce(sum, GrapeAdd(), sm);
    for (long long j = threadIdx.x; j < cnt; j += blockDim.x) {
      [[maybe_unused]] long long t10 = j;
      const float v12 = grape_ld_f32(p->buf[0], ((t0) * p->shape[0][1] + i1) * 128LL + t10);
      const float v11 = (v12 * __int_as_float(0x3e000000));
      grape_st_f32(p->buf[1], ((t0) * p->shape[0][1] + i1) * 128LL + t10, (expf(v11 - mx) / sum));
    }
  }
}
