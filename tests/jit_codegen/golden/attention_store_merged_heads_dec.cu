__device__ static void store(const KParams* p, long long b, long long i, long long d, float acc) {
    [[maybe_unused]] long long t12 = b;
    [[maybe_unused]] const long long i13 = t12 % 12LL; t12 /= 12LL;
    grape_st_f16(p->buf[3], (((t12) * 1LL + i) * 12LL + i13) * 64LL + d, grape_r_f16(acc));