// Where a cooperative launch of two 256-thread blocks per multiprocessor puts each block: prints,
// for the first blocks, their %smid, and how many distinct multiprocessors blocks 0..n-1 cover for
// a few n. The mono executor's persistent kernel runs its steps' work items on blocks 0, 1, ...:
// if consecutive blocks share a multiprocessor, a step with fewer items than blocks uses only part
// of the GPU. Build and run on the GPU machine: nvcc -arch=sm_90 placement.cu -o p && ./p
#include <cstdio>
#include <set>
#include <vector>

__global__ void __launch_bounds__(256, 2) where(unsigned* smid_of) {
  extern __shared__ unsigned char smem[];
  if (threadIdx.x == 0) {
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    smid_of[blockIdx.x] = s;
    smem[0] = (unsigned char)s;
  }
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int shared = 40 * 1024, grid = 2 * sms;
  unsigned* d = nullptr;
  cudaMalloc(&d, grid * sizeof(unsigned));
  cudaFuncSetAttribute(where, cudaFuncAttributeMaxDynamicSharedMemorySize, shared);
  void* args[] = {&d};
  for (int run = 0; run < 3; ++run) {
    cudaLaunchCooperativeKernel((void*)where, grid, 256, args, shared, 0);
    std::vector<unsigned> h(grid);
    cudaMemcpy(h.data(), d, grid * sizeof(unsigned), cudaMemcpyDeviceToHost);
    printf("run %d: smid of blocks 0..15:", run);
    for (int i = 0; i < 16; ++i) printf(" %u", h[i]);
    printf("\n");
    for (int n : {sms / 2, sms, 192, grid}) {
      std::set<unsigned> s(h.begin(), h.begin() + n);
      printf("  blocks 0..%d cover %zu of %d multiprocessors\n", n - 1, s.size(), sms);
    }
  }
  return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
