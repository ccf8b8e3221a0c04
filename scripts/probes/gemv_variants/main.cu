// Times Grape's generated decode GEMV kernels (variants from gen.py, which says how to build) in
// CUDA graphs, as scripts/probes/gemv_probe.cu times the plain GEMV: 200 launches over 20 weight
// copies. The KParams layout mirrors jit/kernel_abi.h.
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
struct KParams {
  const unsigned char* pred;
  void* buf[16];
  long long shape[16][8];
  long long extra[8];
  void* scratch;
  long long splits;
  long long kchunk;
};
#define DECL(n) void launch_##n(const void*, int, int, cudaStream_t);
#define VARIANTS(X, k) X(k##_base) X(k##_pf3) X(k##_lb1)
VARIANTS(DECL, cproj)
VARIANTS(DECL, cfc) VARIANTS(DECL, mlpproj)
    VARIANTS(DECL, cattn) typedef void (*Fn)(const void*, int, int, cudaStream_t);
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      exit(1);                                       \
    }                                                \
  } while (0)
struct Cfg {
  const char* name;
  int N, K, grid, splits, kchunk, wbuf, outbuf;
  bool ln;
  Fn fn[3];
};
#define FNS(k) \
  { launch_##k##_base, launch_##k##_pf3, launch_##k##_lb1 }
const char* vnames[3] = {"base", "pf3", "lb1"};
void* dalloc_rand(size_t n, unsigned seed, float scale) {
  std::vector<__half> h(n);
  srand(seed);
  for (auto& x : h) x = __float2half((rand() / (float)RAND_MAX - 0.5f) * scale);
  void* d;
  CK(cudaMalloc(&d, n * 2));
  CK(cudaMemcpy(d, h.data(), n * 2, cudaMemcpyHostToDevice));
  return d;
}
int main() {
  const int R = 5, copies = 20;
  Cfg cfgs[] = {
      {"c_proj 768x768", 768, 768, 96, 1, 768, 1, 4, false, FNS(cproj)},
      {"c_fc 768x3072 +LN", 3072, 768, 192, 1, 768, 3, 5, true, FNS(cfc)},
      {"mlp_proj 3072x768 (2 splits)", 768, 3072, 192, 2, 1536, 1, 2, false, FNS(mlpproj)},
      {"c_attn 768x2304 +LN", 2304, 768, 144, 1, 768, 3, 5, true, FNS(cattn)},
  };
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  for (Cfg& c : cfgs) {
    const size_t wn = (size_t)c.K * c.N;
    std::vector<void*> ws;
    for (int i = 0; i < copies; ++i) ws.push_back(dalloc_rand(wn, 10 + i, 0.1f));
    KParams kp;
    memset(&kp, 0, sizeof kp);
    kp.extra[0] = R;
    kp.splits = c.splits;
    kp.kchunk = c.kchunk;
    if (c.ln) {
      kp.buf[0] = dalloc_rand(R * c.K, 1, 2.f);
      kp.buf[1] = dalloc_rand(c.K, 2, 2.f);
      kp.buf[2] = dalloc_rand(c.K, 3, 1.f);
      kp.buf[4] = dalloc_rand(c.N, 4, 1.f);
      kp.buf[5] = dalloc_rand(R * c.N, 5, 1.f);
    } else if (c.outbuf == 4) {
      kp.buf[0] = dalloc_rand(R * c.K, 1, 1.f);
      kp.buf[2] = dalloc_rand(c.N, 4, 1.f);
      kp.buf[3] = dalloc_rand(R * c.N, 6, 1.f);
      kp.buf[4] = dalloc_rand(R * c.N, 5, 1.f);
    } else {
      kp.buf[0] = dalloc_rand(R * c.K, 1, 1.f);
      kp.buf[2] = dalloc_rand(R * c.N, 5, 1.f);
    }
    if (c.splits > 1) {
      size_t tiles = c.N / 8, bytes = (tiles * 4 + 255) / 256 * 256 + (size_t)c.splits * R * c.N * 4;
      CK(cudaMalloc(&kp.scratch, bytes));
      CK(cudaMemset(kp.scratch, 0, bytes));
    }
    const int kcs = (c.kchunk + 63) / 64 * 64, smem = 8 * kcs * 2 + 4 * (16 + 4096);
    std::vector<__half> ref;
    for (int v = 0; v < 3; ++v) {
      kp.buf[c.wbuf] = ws[0];
      c.fn[v](&kp, c.grid, smem, st);
      CK(cudaStreamSynchronize(st));
      CK(cudaGetLastError());
      std::vector<__half> out(R * c.N);
      CK(cudaMemcpy(out.data(), kp.buf[c.outbuf], out.size() * 2, cudaMemcpyDeviceToHost));
      double md = 0;
      if (v == 0) ref = out;
      for (size_t i = 0; i < out.size(); ++i)
        md = std::fmax(md, std::fabs(__half2float(out[i]) - __half2float(ref[i])));
      cudaGraph_t g;
      cudaGraphExec_t ge;
      std::vector<KParams> kps(200, kp);
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int i = 0; i < 200; ++i) {
        kps[i].buf[c.wbuf] = ws[i % copies];
        c.fn[v](&kps[i], c.grid, smem, st);
      }
      CK(cudaStreamEndCapture(st, &g));
      CK(cudaGraphInstantiate(&ge, g, 0));
      float best = 1e9;
      for (int rep = 0; rep < 5; ++rep) {
        CK(cudaEventRecord(e0, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaStreamSynchronize(st));
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (rep && ms < best) best = ms;
      }
      printf("%-30s %-7s %6.2f us/launch in a graph  (max |diff| vs base %.3g)\n", c.name, vnames[v],
             best * 1e3 / 200, md);
      cudaGraphExecDestroy(ge);
      cudaGraphDestroy(g);
    }
    for (void* w : ws) cudaFree(w);
  }
  return 0;
}
