// Probe: how fast can a decode-sized GEMV (M = 5 rows, fp16 weights [K][N], fp32 sums) run on the
// lent GPU when written plainly? It gives the figure gemv.cuh should reach and tests design choices
// one at a time. Build: nvcc -O3 -arch=sm_90 -o gemv_probe gemv_probe.cu; run under
// `ncu --metrics gpu__time_duration.sum --csv` for per-kernel times, or alone for graph-replay times.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                        \
  do {                                                                               \
    cudaError_t e = (x);                                                             \
    if (e != cudaSuccess) {                                                          \
      printf("CUDA error %s at line %d: %s\n", #x, __LINE__, cudaGetErrorString(e)); \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

constexpr int M = 5;

__device__ __forceinline__ uint4 ld_stream16(const void* p) {
  uint4 u;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(p));
  return u;
}
__device__ __forceinline__ void unpack8(uint4 u, float* f) {
  const __half2* h = reinterpret_cast<const __half2*>(&u);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    float2 t = __half22float2(h[i]);
    f[2 * i] = t.x;
    f[2 * i + 1] = t.y;
  }
}

__global__ void null_kernel(int* p) {
  if (p && threadIdx.x == 1000) *p = 0;
}

// Reads every weight once (a bound: no arithmetic, no reduction).
__global__ void read_only(const uint4* w, long long n, int* sink) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    uint4 u = ld_stream16(w + i);
    acc.x ^= u.x;
  }
  if (acc.x == 0x12345678u) *sink = 1;
}

// out[m][n] = bias[n] + res[m][n] + sum_k a[m][k] w[k][n]. Block: 256 threads = TX lanes across
// TX * 8 columns x KG = 256 / TX groups along K; every thread's NV weight vectors are requested
// first. A is read from global (L1/L2) per k (SMEM_A = false) or staged in shared memory first.
template <int TX, int NV, bool SMEM_A>
__global__ void __launch_bounds__(256)
    gemv_kn(const __half* __restrict__ a, const __half* __restrict__ w, const __half* __restrict__ bias,
            const __half* __restrict__ res, __half* __restrict__ out, int K, int N) {
  constexpr int KG = 256 / TX, C = M * 8;
  __shared__ float red[8][M][TX * 8];
  __shared__ __align__(16) __half As[SMEM_A ? M * 3072 : 8];
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX, lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
  const int n0 = blockIdx.x * TX * 8, n = n0 + tx * 8;
  uint4 wv[NV];
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int k = ty + KG * i;
    wv[i] = k < K ? ld_stream16(w + (long long)k * N + n) : make_uint4(0, 0, 0, 0);
  }
  if constexpr (SMEM_A) {
    for (int t = threadIdx.x; t < M * K / 8; t += 256)
      reinterpret_cast<uint4*>(As)[t] = reinterpret_cast<const uint4*>(a)[t];
    __syncthreads();
  }
  float acc[C];
#pragma unroll
  for (int i = 0; i < C; ++i) acc[i] = 0.0f;
#pragma unroll
  for (int i = 0; i < NV; ++i) {
    const int k = ty + KG * i;
    if (k < K) {
      float f[8];
      unpack8(wv[i], f);
#pragma unroll
      for (int m = 0; m < M; ++m) {
        const float av = __half2float(SMEM_A ? As[m * K + k] : a[m * K + k]);
#pragma unroll
        for (int v = 0; v < 8; ++v) acc[m * 8 + v] = fmaf(av, f[v], acc[m * 8 + v]);
      }
    }
  }
  // Lanes with the same tx (lane bits >= log2 TX) hold the same columns: plain butterfly sums.
#pragma unroll
  for (int o = 16; o >= TX; o /= 2)
#pragma unroll
    for (int i = 0; i < C; ++i) acc[i] += __shfl_xor_sync(0xffffffffu, acc[i], o);
  if (lane < TX) {
#pragma unroll
    for (int i = 0; i < C; ++i) red[wp][i / 8][tx * 8 + i % 8] = acc[i];
  }
  __syncthreads();
  for (int t = threadIdx.x; t < M * TX * 8; t += 256) {
    const int m = t / (TX * 8), c = t % (TX * 8);
    float s = 0.0f;
#pragma unroll
    for (int q = 0; q < 8; ++q) s += red[q][m][c];
    const int nn = n0 + c;
    s += __half2float(bias[nn]) + __half2float(res[m * N + nn]);
    out[m * N + nn] = __float2half_rn(s);
  }
}

struct Shape {
  int K, N;
};

template <int TX, int NV, bool SMEM_A>
void launch(const __half* a, const __half* w, const __half* b, const __half* r, __half* o, int K, int N,
            cudaStream_t s) {
  gemv_kn<TX, NV, SMEM_A><<<N / (TX * 8), 256, 0, s>>>(a, w, b, r, o, K, N);
}

typedef void (*LaunchFn)(const __half*, const __half*, const __half*, const __half*, __half*, int, int,
                         cudaStream_t);

int main(int argc, char** argv) {
  const int reps = argc > 1 ? atoi(argv[1]) : 200;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct Variant {
    const char* name;
    Shape shape;
    LaunchFn fn;
  };
  // K = 768: KG = 256 / TX groups, NV = 768 / KG vectors per thread. K = 3072: NV = 3072 / KG.
  std::vector<Variant> variants = {
      {"c_attn 768x2304 TX1 glA", {768, 2304}, launch<1, 3, false>},
      {"c_attn 768x2304 TX2 glA", {768, 2304}, launch<2, 6, false>},
      {"c_attn 768x2304 TX1 smA", {768, 2304}, launch<1, 3, true>},
      {"c_proj 768x768 TX1 glA", {768, 768}, launch<1, 3, false>},
      {"c_proj 768x768 TX1 smA", {768, 768}, launch<1, 3, true>},
      {"c_fc 768x3072 TX1 glA", {768, 3072}, launch<1, 3, false>},
      {"c_fc 768x3072 TX2 glA", {768, 3072}, launch<2, 6, false>},
      {"c_fc 768x3072 TX1 smA", {768, 3072}, launch<1, 3, true>},
      {"mlp_proj 3072x768 TX1 glA", {3072, 768}, launch<1, 12, false>},
      {"mlp_proj 3072x768 TX1 smA", {3072, 768}, launch<1, 12, true>},
  };
  const int maxK = 3072, maxN = 3072;
  __half *a, *w, *b, *r, *o;
  CK(cudaMalloc(&a, M * maxK * 2));
  const int copies = 20;  // distinct weight copies cycled, so L2 (50 MB) does not hold them
  CK(cudaMalloc(&w, (size_t)maxK * maxN * 2 * copies));
  CK(cudaMalloc(&b, maxN * 2));
  CK(cudaMalloc(&r, M * maxN * 2));
  CK(cudaMalloc(&o, M * maxN * 2));
  std::vector<__half> ha(M * maxK), hw((size_t)maxK * maxN), hb(maxN), hr(M * maxN), ho(M * maxN);
  srand(1);
  auto rnd = [] { return (rand() / (float)RAND_MAX - 0.5f); };
  for (auto& x : ha) x = __float2half(rnd());
  for (auto& x : hw) x = __float2half(rnd() * 0.1f);
  for (auto& x : hb) x = __float2half(rnd());
  for (auto& x : hr) x = __float2half(rnd());
  CK(cudaMemcpy(a, ha.data(), ha.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(b, hb.data(), hb.size() * 2, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(r, hr.data(), hr.size() * 2, cudaMemcpyHostToDevice));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (const Variant& v : variants) {
    const int K = v.shape.K, N = v.shape.N;
    // Check against the host.
    CK(cudaMemset(o, 0, M * maxN * 2));
    v.fn(a, w, b, r, o, K, N, s);
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(ho.data(), o, M * N * 2, cudaMemcpyDeviceToHost));
    double err = 0, ref = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; n += 7) {
        double acc = __half2float(hb[n]) + __half2float(hr[m * N + n]);
        for (int k = 0; k < K; ++k)
          acc += (double)__half2float(ha[m * K + k]) * __half2float(hw[(size_t)k * N + n]);
        const double d = __half2float(ho[m * N + n]) - acc;
        err += d * d;
        ref += acc * acc;
      }
    // Graph of `reps` launches: per-launch time in a stream, as the graph executor sees it.
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < reps; ++i) v.fn(a, w + (size_t)(i % copies) * maxK * maxN, b, r, o, K, N, s);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    const double us = ms * 1e3 / reps, mb = (double)K * N * 2 / 1e6;
    printf("%-28s %6.2f us/launch in a graph, %5.2f MB -> %6.0f GB/s, rel err %.2e\n", v.name, us, mb,
           mb * 1e3 / us, std::sqrt(err / ref));
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
  }
  {
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < reps; ++i) null_kernel<<<1, 32, 0, s>>>(nullptr);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e0, s));
    CK(cudaGraphLaunch(ge, s));
    CK(cudaEventRecord(e1, s));
    CK(cudaStreamSynchronize(s));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("%-28s %6.2f us/launch in a graph\n", "null kernel", ms * 1e3 / reps);
  }
  for (int n : {768 * 768, 768 * 3072}) {
    cudaEventRecord(e0, s);
    for (int i = 0; i < reps; ++i)
      read_only<<<264, 256, 0, s>>>(reinterpret_cast<const uint4*>(w + (size_t)(i % copies) * maxK * maxN),
                                    n / 8, nullptr);
    cudaEventRecord(e1, s);
    CK(cudaStreamSynchronize(s));
    float ms;
    cudaEventElapsedTime(&ms, e0, e1);
    printf("read_only %d elements        %6.2f us/launch (stream)\n", n, ms * 1e3 / reps);
  }
  return 0;
}
