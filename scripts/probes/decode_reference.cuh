// Shared by the decode probes (decode_megakernel.cu, decode_two_stage.cu): GPT-2 small's decode-step
// shapes, a CUDA error check, random fp16 data, and the plain reference step every probe checks
// its logits against before it times anything (one thread per output, fp16 rows between the
// products, as Grape's kernels round them).
#pragma once
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

// GPT-2 small, 5 rows, 128 past positions (the issue-7 benchmark's decode_step).
constexpr int kLayers = 12, kRows = 5, kD = 768, kHeads = 12, kHd = 64, kPast = 128, kT = kPast + 1,
              kF = 3072, kVocab = 50257;

__device__ __forceinline__ float gelu(float x) {
  return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
}

// ---- reference kernels ----
enum RefKind { kRefQkv, kRefFc, kRefProj, kRefLm };
__global__ void ref_ln(const __half* x, const __half* g, const __half* b, __half* y) {
  const int r = blockIdx.x;
  __shared__ float s1, s2;
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int k = 0; k < kD; ++k) s += __half2float(x[r * kD + k]);
    const float mean = s / kD;
    float v = 0.0f;
    for (int k = 0; k < kD; ++k)
      v += (__half2float(x[r * kD + k]) - mean) * (__half2float(x[r * kD + k]) - mean);
    s1 = mean;
    s2 = rsqrtf(v / kD + 1e-5f);
  }
  __syncthreads();
  for (int k = threadIdx.x; k < kD; k += blockDim.x)
    y[r * kD + k] =
        __float2half((__half2float(x[r * kD + k]) - s1) * s2 * __half2float(g[k]) + __half2float(b[k]));
}
// W [K][N] (or [N][K] when nk).
__global__ void ref_gemv(const __half* a, const __half* W, int K, int N, int nk, const __half* bias, int kind,
                         const __half* res, __half* out, float* logits) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= kRows * N) return;
  const int r = t / N, n = t % N;
  float s = 0.0f;
  for (int k = 0; k < K; ++k)
    s += __half2float(a[r * K + k]) * __half2float(nk ? W[(long long)n * K + k] : W[(long long)k * N + n]);
  if (kind == kRefLm) {
    logits[r * N + n] = s;
    return;
  }
  s += __half2float(bias[n]);
  if (kind == kRefFc) s = gelu(s);
  if (res) s += __half2float(res[r * N + n]);
  out[r * N + n] = __float2half(s);
}
// Attention of row b, head h (block b * kHeads + h) over the 128 past positions and the new one,
// whose key and value it also writes into the caches [kRows][kHeads][kT][kHd].
__global__ void ref_attn(const __half* qkv, __half* kc, __half* vc, __half* out) {
  const int item = blockIdx.x, b = item / kHeads, h = item % kHeads;
  if (threadIdx.x != 0) return;
  const __half* row = qkv + b * 3 * kD + h * kHd;
  for (int d = 0; d < kHd; ++d) {
    kc[((long long)item * kT + kPast) * kHd + d] = row[kD + d];
    vc[((long long)item * kT + kPast) * kHd + d] = row[2 * kD + d];
  }
  float sc[kT], m = -INFINITY, sum = 0.0f;
  for (int t = 0; t < kT; ++t) {
    float s = 0.0f;
    for (int d = 0; d < kHd; ++d)
      s += __half2float(row[d]) * 0.125f * __half2float(kc[((long long)item * kT + t) * kHd + d]);
    sc[t] = s;
    m = fmaxf(m, s);
  }
  for (int t = 0; t < kT; ++t) sum += (sc[t] = expf(sc[t] - m));
  for (int d = 0; d < kHd; ++d) {
    float o = 0.0f;
    for (int t = 0; t < kT; ++t) o += sc[t] * __half2float(vc[((long long)item * kT + t) * kHd + d]);
    out[b * kD + h * kHd + d] = __float2half(o / sum);
  }
}

// A layer's weights in their natural layouts ([in][out], as Hugging Face's Conv1D) and its caches.
struct RefLayer {
  const __half *ln1g, *ln1b, *wqkv, *bqkv, *wproj, *bproj, *ln2g, *ln2b, *wfc, *bfc, *wmp, *bmp;
  __half *kc, *vc;
};
// The whole step: x_in [kRows][kD] through the layers, ln_f and lm_head (wte [kVocab][kD]) into
// logits [kRows][kVocab]. Writes the caches' new position, as the probes do.
inline void reference_step(const std::vector<RefLayer>& layers, const __half* x_in, const __half* lnfg,
                           const __half* lnfb, const __half* wte, float* logits) {
  __half *xr, *qkv, *o, *f, *h;
  CK(cudaMalloc(&xr, kRows * kD * 2));
  CK(cudaMalloc(&qkv, kRows * 3 * kD * 2));
  CK(cudaMalloc(&o, kRows * kD * 2));
  CK(cudaMalloc(&f, kRows * kF * 2));
  CK(cudaMalloc(&h, kRows * kF * 2));
  for (size_t l = 0; l < layers.size(); ++l) {
    const RefLayer& w = layers[l];
    const __half* xin = l == 0 ? x_in : xr;
    ref_ln<<<kRows, 256>>>(xin, w.ln1g, w.ln1b, h);
    ref_gemv<<<(kRows * 3 * kD + 255) / 256, 256>>>(h, w.wqkv, kD, 3 * kD, 0, w.bqkv, kRefQkv, nullptr, qkv,
                                                    nullptr);
    ref_attn<<<kRows * kHeads, 32>>>(qkv, w.kc, w.vc, o);
    ref_gemv<<<(kRows * kD + 255) / 256, 256>>>(o, w.wproj, kD, kD, 0, w.bproj, kRefProj, xin, xr, nullptr);
    ref_ln<<<kRows, 256>>>(xr, w.ln2g, w.ln2b, h);
    ref_gemv<<<(kRows * kF + 255) / 256, 256>>>(h, w.wfc, kD, kF, 0, w.bfc, kRefFc, nullptr, f, nullptr);
    ref_gemv<<<(kRows * kD + 255) / 256, 256>>>(f, w.wmp, kF, kD, 0, w.bmp, kRefProj, xr, xr, nullptr);
  }
  ref_ln<<<kRows, 256>>>(xr, lnfg, lnfb, h);
  ref_gemv<<<(kRows * kVocab + 255) / 256, 256>>>(h, wte, kD, kVocab, 1, nullptr, kRefLm, nullptr, nullptr,
                                                  logits);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  for (__half* p : {xr, qkv, o, f, h}) CK(cudaFree(p));
}

// How far logits [kRows][kVocab] (device) are from the reference's.
struct LogitsDiff {
  double rel_l2, max_abs;
  int argmax_equal;  // rows whose largest logit is at the same index
  bool ok() const { return rel_l2 <= 1e-2 && std::isfinite(rel_l2); }
};
inline LogitsDiff compare_logits(const float* d_logits, const float* d_ref) {
  std::vector<float> a((size_t)kRows * kVocab), r((size_t)kRows * kVocab);
  CK(cudaMemcpy(a.data(), d_logits, a.size() * 4, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(r.data(), d_ref, r.size() * 4, cudaMemcpyDeviceToHost));
  double num = 0, den = 0, maxd = 0;
  int same = 0;
  for (int row = 0; row < kRows; ++row) {
    size_t ia = 0, ir = 0;
    for (int n = 0; n < kVocab; ++n) {
      const size_t i = (size_t)row * kVocab + n;
      num += (a[i] - r[i]) * (double)(a[i] - r[i]);
      den += (double)r[i] * r[i];
      maxd = std::max(maxd, (double)std::fabs(a[i] - r[i]));
      if (a[i] > a[row * kVocab + ia]) ia = n;
      if (r[i] > r[row * kVocab + ir]) ir = n;
    }
    same += ia == ir;
  }
  return LogitsDiff{std::sqrt(num / std::max(den, 1e-30)), maxd, same};
}

// ---- random data ----
inline float urand() {  // uniform [-1, 1), the same sequence in every probe
  static uint64_t rng = 88172645463325252ull;
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}
template <typename T>
T* upload(const std::vector<T>& v) {
  T* d;
  CK(cudaMalloc(&d, v.size() * sizeof(T)));
  CK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
inline std::vector<__half> rand_vec(size_t n, float scale, float center = 0.0f) {
  std::vector<__half> v(n);
  for (auto& e : v) e = __float2half(center + scale * urand());
  return v;
}
