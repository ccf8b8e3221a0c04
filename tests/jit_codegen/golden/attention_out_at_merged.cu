__device__ static T* out_at(const KParams* p, long long b, long long i, long long d) {
    [[maybe_unused]] long long t16 = b;
    [[maybe_unused]] const long long i17 = t16 % 12LL; t16 /= 12LL;
    return (T*)p->buf[3] + (((t16) * p->shape[0][2] + i) * 12LL + i17) * 64LL + d;