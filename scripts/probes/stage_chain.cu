// Probe: what does one dependent all-to-all step cost on the lent GPU, with no work in it? A decode
// step of GPT-2 small is a chain of 60 such steps (5 a layer: every block of a step needs every
// row the previous step wrote), so this is the floor under issue 7's decode_step target whatever
// the kernels do. Four ways, each a chain of S steps over one block per multiprocessor, each step
// reading the previous step's rows (5 x 768 fp16, as decode's activations) and writing its share:
//   counter   one persistent kernel; a step waits for a counter the previous step's blocks add to
//             with a release (scripts/probes/decode_megakernel.cu's mechanism)
//   barrier   the same with the counter read by every thread (no __syncthreads after one poller)
//   graph     one kernel per step, S kernels in a CUDA graph (stream order)
//   graph+pdl the same with programmatic dependent launch (griddepcontrol), as Grape's graph executor
// It prints the time per step as (chain of S - chain of 1) / (S - 1), so launch costs cancel.
// Build: nvcc -O3 -std=c++17 -arch=sm_90 -o stage_chain scripts/probes/stage_chain.cu
// Run:   ./stage_chain [S = 60] [iters = 200]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

constexpr int kElems = 5 * 768, kThreads = 256;

__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void red_release_add(unsigned* p, unsigned v) {
  asm volatile("red.release.gpu.global.add.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// One step's work: every thread reads its 16-byte pieces of the previous rows (all blocks read all
// rows), the block adds them up, and writes its share of the next rows.
__device__ void step_rows(const __half* src, __half* dst, float* red) {
  float s = 0.0f;
  for (int t = threadIdx.x; t < kElems / 8; t += kThreads) {
    const uint4 u = __ldcg(reinterpret_cast<const uint4*>(src) + t);
    const __half* h = reinterpret_cast<const __half*>(&u);
    for (int e = 0; e < 8; ++e) s += __half2float(h[e]);
  }
  for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
  __syncthreads();
  const int share = (kElems + gridDim.x - 1) / gridDim.x, at = blockIdx.x * share + threadIdx.x;
  if (threadIdx.x < share && at < kElems) {
    float v = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) v += red[w];
    dst[at] = __float2half(v * 1e-4f);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    chain(unsigned* cnt, unsigned epoch, int steps, int every_thread_polls, __half* buf) {
  __shared__ float red[kThreads / 32];
  for (int s = 0; s < steps; ++s) {
    if (s > 0) {
      const unsigned target = gridDim.x * epoch;
      if (every_thread_polls) {
        while (ld_acquire(cnt + s - 1) < target) {
        }
      } else {
        if (threadIdx.x == 0)
          while (ld_acquire(cnt + s - 1) < target) {
          }
        __syncthreads();
      }
    }
    step_rows(buf + ((s + 1) % 2) * kElems, buf + (s % 2) * kElems, red);
    __syncthreads();
    if (threadIdx.x == 0) red_release_add(cnt + s, 1);
  }
}

// wbytes > 0: the step also brings `wbytes` of this block's weight (its own slice of `w`, from
// DRAM) into shared memory by bulk copies issued before the wait, as Grape's decode GEMVs do, and
// waits for them before it ends: does that traffic delay the rows' loads? wmode 1: every step reads
// the same slice (the weights stay in L2); wmode 2: each step also prefetches the next step's slice
// into L2 before its wait (as gemv_mma prefetches the next product's weight).
__global__ void __launch_bounds__(kThreads, 1)
    one_step(__half* buf, int s, int pdl, const unsigned char* w, unsigned wbytes, int wmode) {
  __shared__ float red[kThreads / 32];
  __shared__ unsigned long long bar;
  extern __shared__ __align__(128) unsigned char tile[];
  const unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
  if (wbytes && threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(b) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(b), "r"(wbytes) : "memory");
    const unsigned char* src = w + ((size_t)(wmode == 1 ? 0 : s) * gridDim.x + blockIdx.x) * wbytes;
    if (wmode == 2)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src + (size_t)gridDim.x * wbytes),
                   "r"(wbytes)
                   : "memory");
    for (unsigned o = 0; o < wbytes; o += 16384)
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              (unsigned)__cvta_generic_to_shared(tile + o)),
          "l"(src + o), "r"(min(16384u, wbytes - o)), "r"(b)
          : "memory");
  }
  if (pdl) asm volatile("griddepcontrol.wait;" ::: "memory");
  step_rows(buf + ((s + 1) % 2) * kElems, buf + (s % 2) * kElems, red);
  if (wbytes) {
    unsigned done = 0;
    while (!done)
      asm volatile(
          "{\n\t.reg .pred p;\n\tmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\tselp.u32 %0, 1, 0, "
          "p;\n\t}"
          : "=r"(done)
          : "r"(b)
          : "memory");
  }
  if (pdl) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

int main(int argc, char** argv) {
  const int S = argc > 1 ? std::atoi(argv[1]) : 60, iters = argc > 2 ? std::atoi(argv[2]) : 200;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int grid = prop.multiProcessorCount;
  std::printf("device %s, %d SMs, %d blocks of %d threads, chains of %d steps\n", prop.name, grid, grid,
              kThreads, S);
  __half* buf;
  CK(cudaMalloc(&buf, 2 * kElems * 2));
  CK(cudaMemset(buf, 0, 2 * kElems * 2));
  unsigned* cnt;
  CK(cudaMalloc(&cnt, S * 4));
  CK(cudaMemset(cnt, 0, S * 4));
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  auto time_it = [&](auto&& launch) {
    for (int i = 0; i < 20; ++i) launch();
    CK(cudaEventRecord(e0, st));
    for (int i = 0; i < iters; ++i) launch();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    float ms;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    return 1000.0 * ms / iters;
  };
  // The persistent chains; the counters only grow, so every launch passes a new epoch.
  unsigned epoch = 0;
  for (int every : {0, 1}) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      int steps = k == 0 ? 1 : S;
      t[k] = time_it([&] {
        ++epoch;
        void* args[] = {&cnt, &epoch, &steps, &every, &buf};
        CK(cudaLaunchCooperativeKernel((void*)chain, grid, kThreads, args, 0, st));
      });
      // A chain of 1 step only counts step 0: the other counters fall behind their epoch.
      if (k == 0) {
        CK(cudaStreamSynchronize(st));
        CK(cudaMemset(cnt, 0, S * 4));
        epoch = 0;
      }
    }
    std::printf("%-10s %6.3f us a step  (chain of %d: %.1f us, of 1: %.1f us)\n",
                every ? "barrier" : "counter", (t[1] - t[0]) / (S - 1), S, t[1], t[0]);
  }
  // One kernel per step in a CUDA graph, without and with programmatic dependent launch; then with
  // 16 and 32 KB of weight per block and step (2.1 and 4.2 MB a step: decode's products move 2.4-4.7).
  unsigned char* w;
  const unsigned wmax = 32768;
  CK(cudaMalloc(&w, (size_t)(S + 1) * grid * wmax));
  CK(cudaMemset(w, 1, (size_t)(S + 1) * grid * wmax));
  CK(cudaFuncSetAttribute(one_step, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)wmax));
  struct Case {
    int pdl;
    unsigned wb;
    int wmode;
  };
  for (auto [pdl, wb, wmode] : {Case{0, 0u, 0}, Case{1, 0u, 0}, Case{1, 16384u, 0}, Case{1, wmax, 0},
                                Case{1, wmax, 1}, Case{1, wmax, 2}}) {
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const int steps = k == 0 ? 1 : S;
      cudaGraph_t g;
      CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
      for (int s = 0; s < steps; ++s) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(grid);
        cfg.blockDim = dim3(kThreads);
        cfg.dynamicSmemBytes = wb;
        cfg.stream = st;
        cudaLaunchAttribute attr[1];
        attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[0].val.programmaticStreamSerializationAllowed = 1;
        cfg.attrs = attr;
        cfg.numAttrs = pdl ? 1 : 0;
        CK(cudaLaunchKernelEx(&cfg, one_step, buf, s, pdl, (const unsigned char*)w, wb, wmode));
      }
      CK(cudaStreamEndCapture(st, &g));
      cudaGraphExec_t ge;
      CK(cudaGraphInstantiate(&ge, g, 0));
      t[k] = time_it([&] { CK(cudaGraphLaunch(ge, st)); });
      CK(cudaGraphExecDestroy(ge));
      CK(cudaGraphDestroy(g));
    }
    std::printf("%-10s %6.3f us a step  (chain of %d: %.1f us, of 1: %.1f us), weight %u KB a block%s\n",
                pdl ? "graph+pdl" : "graph", (t[1] - t[0]) / (S - 1), S, t[1], t[0], wb / 1024,
                wmode == 1   ? ", the same slice every step (in L2)"
                : wmode == 2 ? ", the next step's slice prefetched into L2"
                             : "");
  }
  return 0;
}
