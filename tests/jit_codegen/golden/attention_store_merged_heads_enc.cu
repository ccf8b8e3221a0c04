__device__ static void store(const KParams* p, long long b, long long i, long long d, float acc) {
    [[maybe_unused]] long long t14 = b;
    [[maybe_unused]] const long long i15 = t14 % 12LL; t14 /= 12LL;
    grape_st_f16(p->buf[3], (((t14) * p->shape[0][2] + i) * 12LL + i15) * 64LL + d, grape_r_f16(acc));