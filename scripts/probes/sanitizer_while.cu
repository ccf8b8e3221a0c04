// Does compute-sanitizer run a CUDA graph with a conditional WHILE node? A program with nothing of
// Grape in it: nvcc-compiled kernels, the runtime API, the documented way to set the handle
// (cudaGraphSetConditional from the device runtime header). Issue 11 / docs/execution.md.
//
//   nvcc -O2 -arch=sm_90 -o sanitizer_while scripts/probes/sanitizer_while.cu
//   ./sanitizer_while MODE [LAUNCHES]               (prints "ok" or the first failure)
//   compute-sanitizer --tool memcheck ./sanitizer_while MODE
//
// MODEs:
//   plain    no conditional node: the body's kernels chained in an ordinary graph (the control)
//   while    WHILE node; body: a kernel that reads `a` and writes `b`, then the condition kernel
//   empty    WHILE node; body: only the condition kernel
//   once     WHILE node whose condition is false at entry (the body never runs)
//   shared   as `while`, the body's kernel exchanging values through dynamic shared memory
//   long     as `while` with 100 kernels in the body before the condition kernel
//   deep     as `while` with 300 kernels before the loop
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                   \
  do {                                                                             \
    cudaError_t e_ = (x);                                                          \
    if (e_ != cudaSuccess) {                                                       \
      std::printf("FAIL line %d: %s: %s\n", __LINE__, #x, cudaGetErrorString(e_)); \
      return 1;                                                                    \
    }                                                                              \
  } while (0)

__global__ void enter(cudaGraphConditionalHandle h, unsigned* trips, int first) {
  *trips = 0;
  cudaGraphSetConditional(h, first ? 1u : 0u);
}

__global__ void work(const float* a, float* b, int n, unsigned* trips) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] * 2.0f + (float)*trips;
}

// The same with a block-wide exchange through dynamic shared memory (racecheck instruments it).
__global__ void work_shared(const float* a, float* b, int n, unsigned* trips) {
  extern __shared__ float s[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  s[threadIdx.x] = i < n ? a[i] : 0.0f;
  __syncthreads();
  float v = s[(threadIdx.x + 1) % blockDim.x];
  __syncthreads();
  if (i < n) b[i] = v * 0.0f + a[i] * 2.0f + (float)*trips;
}

__global__ void next(cudaGraphConditionalHandle h, unsigned* trips, unsigned max) {
  unsigned t = ++*trips;
  cudaGraphSetConditional(h, t < max ? 1u : 0u);
}

__global__ void next_plain(unsigned* trips) { ++*trips; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "while";
  const int launches = argc > 2 ? std::atoi(argv[2]) : 20;
  const bool plain = !std::strcmp(mode, "plain"), empty = !std::strcmp(mode, "empty"),
             once = !std::strcmp(mode, "once"), shared = !std::strcmp(mode, "shared"),
             lng = !std::strcmp(mode, "long"), deep = !std::strcmp(mode, "deep");
  if (!plain && !empty && !once && !shared && !lng && !deep && std::strcmp(mode, "while")) {
    std::printf("usage: %s plain|while|empty|once|shared|long|deep [LAUNCHES]\n", argv[0]);
    return 2;
  }
  const int n = 4096;
  const unsigned max = 8;
  float *a, *b;
  unsigned* trips;
  CHECK(cudaMalloc(&a, n * sizeof(float)));
  CHECK(cudaMalloc(&b, n * sizeof(float)));
  CHECK(cudaMalloc(&trips, sizeof(unsigned)));
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i) host[i] = (float)i;
  CHECK(cudaMemcpy(a, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemset(b, 0, n * sizeof(float)));
  CHECK(cudaMemset(trips, 0, sizeof(unsigned)));
  CHECK(cudaDeviceSynchronize());

  cudaGraph_t g;
  CHECK(cudaGraphCreate(&g, 0));
  cudaKernelNodeParams kp = {};
  int grid = (n + 255) / 256;
  if (plain) {
    cudaGraphNode_t w, c;
    void* wargs[] = {&a, &b, (void*)&n, &trips};
    kp = {(void*)work, dim3(grid), dim3(256), 0, wargs, nullptr};
    CHECK(cudaGraphAddKernelNode(&w, g, nullptr, 0, &kp));
    void* cargs[] = {&trips};
    kp = {(void*)next_plain, dim3(1), dim3(1), 0, cargs, nullptr};
    CHECK(cudaGraphAddKernelNode(&c, g, &w, 1, &kp));
  } else {
    cudaGraphConditionalHandle h;
    CHECK(cudaGraphConditionalHandleCreate(&h, g, 0, 0));
    int first = once ? 0 : 1;
    void* eargs[] = {&h, &trips, &first};
    cudaGraphNode_t e = nullptr;
    for (int i = 0; i < (deep ? 300 : 0); ++i) {
      void* wargs[] = {&a, &b, (void*)&n, &trips};
      kp = {(void*)work, dim3(grid), dim3(256), 0, wargs, nullptr};
      cudaGraphNode_t before = e;
      CHECK(cudaGraphAddKernelNode(&e, g, before ? &before : nullptr, before ? 1 : 0, &kp));
    }
    kp = {(void*)enter, dim3(1), dim3(1), 0, eargs, nullptr};
    cudaGraphNode_t before = e;
    CHECK(cudaGraphAddKernelNode(&e, g, before ? &before : nullptr, before ? 1 : 0, &kp));
    cudaGraphNodeParams cp = {};
    cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h;
    cp.conditional.type = cudaGraphCondTypeWhile;
    cp.conditional.size = 1;
    cudaGraphNode_t cn;
    CHECK(cudaGraphAddNode(&cn, g, &e, nullptr, 1, &cp));
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    cudaGraphNode_t prev = nullptr, w;
    if (!empty) {
      void* wargs[] = {&a, &b, (void*)&n, &trips};
      kp = {shared ? (void*)work_shared : (void*)work,
            dim3(grid),
            dim3(256),
            shared ? 256u * 4u : 0u,
            wargs,
            nullptr};
      for (int i = 0; i < (lng ? 100 : 1); ++i) {
        cudaGraphNode_t before = prev;
        CHECK(cudaGraphAddKernelNode(&w, body, before ? &before : nullptr, before ? 1 : 0, &kp));
        prev = w;
      }
    }
    void* nargs[] = {&h, &trips, (void*)&max};
    cudaGraphNode_t c;
    kp = {(void*)next, dim3(1), dim3(1), 0, nargs, nullptr};
    CHECK(cudaGraphAddKernelNode(&c, body, prev ? &prev : nullptr, prev ? 1 : 0, &kp));
  }
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, g, 0));
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned expect = plain ? 1 : once ? 0 : max;
  for (int l = 0; l < launches; ++l) {
    CHECK(cudaMemsetAsync(trips, 0, sizeof(unsigned), s));
    CHECK(cudaGraphLaunch(exec, s));
    unsigned got = 0;
    CHECK(cudaMemcpyAsync(&got, trips, sizeof got, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    if (got != expect) {
      std::printf("FAIL launch %d: %u trips, expected %u\n", l, got, expect);
      return 1;
    }
  }
  CHECK(cudaMemcpy(host.data(), b, n * sizeof(float), cudaMemcpyDeviceToHost));
  float want = (plain || once || empty) ? (once || empty ? 0.0f : 2.0f * 5 + 0) : 2.0f * 5 + (max - 1);
  if (host[5] != want) {
    std::printf("FAIL b[5] = %g, expected %g\n", host[5], want);
    return 1;
  }
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(g));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(trips));
  std::printf("ok: %s, %d launches\n", mode, launches);
  return 0;
}
