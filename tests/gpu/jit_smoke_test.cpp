// GPU smoke test of the jit plumbing: NVRTC compiles a kernel for the device, the driver loads the
// cubin (and the PTX), launches it, and the result comes back right. Skips without a driver.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <vector>

#include "jit/cuda_driver.h"
#include "jit/kernel_cache.h"
#include "jit/nvrtc.h"
#include "base/error.h"

namespace grape::jit {
namespace {

#define SKIP_WITHOUT_GPU()                                                                 \
  do {                                                                                     \
    std::string why;                                                                       \
    if (!driver_available(&why)) GTEST_SKIP() << "no GPU here (" << why << ")";            \
    if (Device::count() == 0) GTEST_SKIP() << "the CUDA driver reports no device";         \
    if (!nvrtc_available(&why)) GTEST_SKIP() << "NVRTC cannot be loaded: " << why;         \
  } while (0)

const char* const kVectorAdd = R"(
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
)";

void run_vector_add(const Device& device, const Module& module) {
  const int n = 100003;
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i % 97);
  }
  Stream stream(device);
  DeviceBuffer da(device, n * sizeof(float), "input a"), db(device, n * sizeof(float), "input b"),
      dc(device, n * sizeof(float), "output c");
  da.copy_from_host(a.data(), n * sizeof(float), stream.handle());
  db.copy_from_host(b.data(), n * sizeof(float), stream.handle());
  dc.fill_bytes(0, stream.handle());
  CUfunction f = module.function("vector_add");
  CUdeviceptr pa = da.ptr(), pb = db.ptr(), pc = dc.ptr();
  int count = n;
  void* params[] = {&pa, &pb, &pc, &count};
  Event start(device), stop(device);
  start.record(stream.handle());
  launch(f, {static_cast<unsigned>(device.sm_count()) * 4}, {256}, 0, stream.handle(), params, "kernel vector_add");
  stop.record(stream.handle());
  dc.copy_to_host(c.data(), n * sizeof(float), stream.handle());
  stream.synchronize();
  stop.synchronize();
  EXPECT_GE(stop.elapsed_ms_since(start), 0.0f);
  for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "element " << i;
}

TEST(GpuJit, DeviceReportsItself) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  EXPECT_FALSE(device.name().empty());
  EXPECT_GE(device.cc_major(), 7);
  EXPECT_GT(device.sm_count(), 0);
  EXPECT_GT(device.total_memory(), device.free_memory() / 2);
  EXPECT_GT(device.free_memory(), 0u);
  std::cout << "[ info     ] " << device.label() << ", " << device.arch() << ", " << device.sm_count() << " SMs, "
            << (device.total_memory() >> 20) << " MiB, driver " << driver().version << " (" << driver().library_path
            << "), NVRTC " << nvrtc_version() << "\n";
}

TEST(GpuJit, CubinFromNvrtcRunsVectorAdd) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  CompileResult r = compile_cuda(kVectorAdd, "vector_add", device.arch());
  ASSERT_FALSE(r.cubin.empty());
  Module module(device, r.cubin.data(), "kernel vector_add (cubin)");
  run_vector_add(device, module);
}

TEST(GpuJit, PtxFromNvrtcRunsVectorAdd) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  CompileResult r = compile_cuda(kVectorAdd, "vector_add", "compute_" + device.arch().substr(3));
  ASSERT_FALSE(r.ptx.empty());
  Module module(device, r.ptx.c_str(), "kernel vector_add (PTX)");
  run_vector_add(device, module);
}

TEST(GpuJit, CachedCubinRunsVectorAdd) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  char tmpl[] = "/tmp/grape-gpu-cache-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  {
    KernelCache cache(std::string(tmpl) + "/kernels");
    compile_cached(kVectorAdd, "vector_add", device.arch(), {}, &cache);
    CompileResult hit = compile_cached(kVectorAdd, "vector_add", device.arch(), {}, &cache);
    ASSERT_TRUE(hit.from_cache);
    Module module(device, hit.cubin.data(), "kernel vector_add (cached cubin)");
    run_vector_add(device, module);
    cache.clear();
  }
  std::filesystem::remove_all(tmpl);
}

TEST(GpuJit, ErrorsNameTheCallAndTheKernel) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  CompileResult r = compile_cuda(kVectorAdd, "vector_add", device.arch());
  Module module(device, r.cubin.data(), "kernel k_12 (add)");
  try {
    module.function("no_such_kernel");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Device);
    EXPECT_NE(std::string(e.what()).find("cuModuleGetFunction failed for kernel no_such_kernel in kernel k_12 (add): "
                                         "CUDA_ERROR_NOT_FOUND"),
              std::string::npos)
        << e.what();
  }
  // A block larger than any device allows.
  CUfunction f = module.function("vector_add");
  void* params[] = {nullptr, nullptr, nullptr, nullptr};
  try {
    launch(f, {1}, {4096}, 0, nullptr, params, "kernel k_12 (add)");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cuLaunchKernel failed for kernel k_12 (add): CUDA_ERROR_INVALID_VALUE: invalid argument");
  }
}

TEST(GpuJit, OutOfMemoryIsReported) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  std::size_t too_much = device.total_memory() * 4;
  try {
    DeviceBuffer huge(device, too_much, "an impossible buffer");
    FAIL() << "allocated " << too_much << " bytes";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::OutOfMemory) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot allocate " + std::to_string(too_much) + " bytes on device 0"),
              std::string::npos)
        << e.what();
  }
  DeviceBuffer fine(device, 1 << 20, "a small buffer");  // the device still works
  EXPECT_NE(fine.ptr(), 0u);
}

TEST(GpuJit, PinnedMemory) {
  SKIP_WITHOUT_GPU();
  Device device(0);
  PinnedBuffer pinned(device, 4096);
  ASSERT_NE(pinned.data(), nullptr);
  std::memset(pinned.data(), 7, 4096);
  DeviceBuffer d(device, 4096);
  Stream stream(device);
  d.copy_from_host(pinned.data(), 4096, stream.handle());
  std::vector<unsigned char> back(4096);
  d.copy_to_host(back.data(), 4096, stream.handle());
  stream.synchronize();
  EXPECT_EQ(back, std::vector<unsigned char>(4096, 7));
}

}  // namespace
}  // namespace grape::jit
