// Inputs in device memory and caller streams (issue 8 item 3), against the CPU reference: device
// pointers read in place (a new pointer rewrites a graph's nodes, never builds another graph), an
// input the entry updates in place copied so the caller's memory is never written, the session's
// own device buffers, and runs queued on the caller's stream after the caller's own work there.
// Without a CUDA driver every test skips with a message.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/model.h"
#include "tests/gpu/gpu_test_util.h"

namespace grape {
namespace {

using namespace gpu_test;

// Device memory holding a copy of `host`, as a device tensor that keeps it alive.
Tensor to_device(const jit::Device& dev, const Tensor& host) {
  auto buf = std::make_shared<jit::DeviceBuffer>(dev, host.nbytes(), "a test input");
  dev.make_current();
  jit::check(jit::driver().cuMemcpyHtoDAsync(buf->ptr(), host.raw(), host.nbytes(), nullptr),
             "cuMemcpyHtoDAsync", "a test input");
  jit::check(jit::driver().cuCtxSynchronize(), "cuCtxSynchronize", "a test input");
  return Tensor::wrap_device(host.dtype(), host.shape(),
                             reinterpret_cast<void*>(static_cast<uintptr_t>(buf->ptr())), buf);
}

Tensor to_host(const Tensor& device) {
  Tensor h(device.dtype(), device.shape());
  jit::check(jit::driver().cuCtxSynchronize(), "cuCtxSynchronize", "a test output");
  jit::check(
      jit::driver().cuMemcpyDtoHAsync(
          h.raw(), static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(device.raw())), h.nbytes(), nullptr),
      "cuMemcpyDtoHAsync", "a test output");
  jit::check(jit::driver().cuCtxSynchronize(), "cuCtxSynchronize", "a test output");
  return h;
}

const char* kSoftmaxChain = R"(fn main(x: f32[B, 64], w: f32[64, 64]) -> f32[B, 64] {
  let h = softmax(x @ w, axis=-1)
  return softmax(h * 3.0, axis=-1)
}
)";

class DeviceInputs : public ::testing::TestWithParam<std::string> {};

TEST_P(DeviceInputs, AreReadInPlaceAndANewPointerKeepsTheGraph) {
  REQUIRE_GPU();
  const std::string executor = GetParam();
  auto m = Model::load_source(kSoftmaxChain, "device_inputs.grp");
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
  jit::Device dev(0);
  std::vector<Tensor> xs = {sample(DType::F32, {4, 64}, 1), sample(DType::F32, {4, 64}, 2)};
  Tensor w = sample(DType::F32, {64, 64}, 3);
  std::vector<Tensor> dxs = {to_device(dev, xs[0]), to_device(dev, xs[1])};
  Tensor dw = to_device(dev, w);
  for (int call = 0; call < 5; ++call) {
    const size_t k = call % 2;
    const std::string at = executor + " call " + std::to_string(call);
    auto want = cpu.run({{"x", xs[k]}, {"w", w}});
    // w in device memory, x alternating between two device buffers, and once from the host.
    Tensor x = call == 4 ? xs[k] : dxs[k];
    auto got = gpu.run({{"x", x}, {"w", dw}});
    ASSERT_EQ(got.size(), 1u);
    expect_close(want[0], got[0], at);
    const RunStats st = gpu.last_run_stats();
    if (executor == "graph") {
      EXPECT_EQ(st.graphs, 1u) << at << ": a new input pointer must not build another graph";
      if (call > 0) {
        EXPECT_EQ(st.graph_updates, 1) << at << ": the pointer changed, so the nodes were rewritten";
      }
    }
  }
  // The caller's memory is as it was.
  for (size_t k = 0; k < 2; ++k) expect_close(xs[k], to_host(dxs[k]), "x after the runs");
}

TEST_P(DeviceInputs, AnInputUpdatedInPlaceIsCopiedNotWritten) {
  REQUIRE_GPU();
  const std::string executor = GetParam();
  // y aliases x's storage when the plan updates it in place; the caller's x must stay untouched.
  auto m = Model::load_source(R"(fn main(x: f32[8, 16], v: f32[2, 16]) -> f32[8, 16] {
  var y = x
  y[0:2] = v * 2.0
  return y + 1.0
}
)",
                              "update_input.grp");
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
  jit::Device dev(0);
  Tensor x = sample(DType::F32, {8, 16}, 4), v = sample(DType::F32, {2, 16}, 5);
  Tensor dx = to_device(dev, x), dv = to_device(dev, v);
  for (int call = 0; call < 3; ++call) {
    auto want = cpu.run({{"x", x}, {"v", v}});
    auto got = gpu.run({{"x", dx}, {"v", dv}});
    expect_close(want[0], got[0], executor + " call " + std::to_string(call));
  }
  Tensor after = to_host(dx);
  ASSERT_EQ(after.nbytes(), x.nbytes());
  EXPECT_EQ(std::memcmp(after.raw(), x.raw(), x.nbytes()), 0) << "the run wrote the caller's device input";
}

TEST_P(DeviceInputs, SessionDeviceBuffersAndTheCallersStream) {
  REQUIRE_GPU();
  const std::string executor = GetParam();
  auto m = Model::load_source(kSoftmaxChain, "device_inputs.grp");
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  Session gpu(m, SessionOptions{"main", "cuda", executor, 0});
  jit::Device dev(0);
  Tensor x = sample(DType::F32, {4, 64}, 6), w = sample(DType::F32, {64, 64}, 7);
  Tensor dx = gpu.device_tensor(DType::F32, {4, 64});
  ASSERT_TRUE(dx.on_device());
  expect_close(Tensor(DType::F32, {4, 64}), to_host(dx), "a new device buffer is zero-filled");
  Tensor dw = gpu.device_tensor(DType::F32, {64, 64});
  jit::check(jit::driver().cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dw.raw())),
                                             w.raw(), w.nbytes(), nullptr),
             "cuMemcpyHtoDAsync", "w");
  jit::check(jit::driver().cuCtxSynchronize(), "cuCtxSynchronize", "w");

  // The caller's stream holds back a copy of x into the device buffer until a gate in pinned
  // host memory opens, 200 ms after the run was called. A run on the session's own stream would
  // read x's zeros long before; on the caller's stream it waits for the copy.
  jit::Stream caller(dev);
  jit::PinnedBuffer gate(dev, 16, "the test's gate"), staged(dev, x.nbytes(), "x staged");
  *static_cast<volatile uint32_t*>(gate.data()) = 0;
  std::memcpy(staged.data(), x.raw(), x.nbytes());
  const auto gate_at = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(gate.data()));
  jit::check(jit::driver().cuStreamWaitValue32(caller.handle(), gate_at, 1, CU_STREAM_WAIT_VALUE_GEQ),
             "cuStreamWaitValue32", "the test's gate");
  jit::check(jit::driver().cuMemcpyHtoDAsync(static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(dx.raw())),
                                             staged.data(), x.nbytes(), caller.handle()),
             "cuMemcpyHtoDAsync", "x");
  gpu.set_stream(caller.handle());
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::atomic_thread_fence(std::memory_order_seq_cst);
    *static_cast<volatile uint32_t*>(gate.data()) = 1;
  });
  std::vector<Tensor> got;
  try {
    got = gpu.run({{"x", dx}, {"w", dw}});
  } catch (...) {
    opener.join();
    throw;
  }
  opener.join();
  expect_close(cpu.run({{"x", x}, {"w", w}})[0], got[0], executor + " on the caller's stream");
  // Back on the session's own stream.
  gpu.set_stream(nullptr);
  caller.synchronize();
  expect_close(cpu.run({{"x", x}, {"w", w}})[0], gpu.run({{"x", dx}, {"w", dw}})[0],
               executor + " own stream");
}

INSTANTIATE_TEST_SUITE_P(Executors, DeviceInputs, ::testing::Values("eager", "graph"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// A CPU session refuses device memory instead of reading it on the host.
TEST(DeviceInputsOnTheCpu, AreRefused) {
  REQUIRE_GPU();
  auto m = Model::load_source(kSoftmaxChain, "device_inputs.grp");
  Session cpu(m, SessionOptions{"main", "cpu", "auto", 0});
  jit::Device dev(0);
  Tensor dx = to_device(dev, sample(DType::F32, {4, 64}, 1));
  try {
    cpu.run({{"x", dx}, {"w", sample(DType::F32, {64, 64}, 3)}});
    FAIL() << "a device input ran on the CPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("GPU memory"), std::string::npos) << e.what();
  }
  EXPECT_EQ(jit::device_of_pointer(dx.raw()), 0);
  Tensor host = sample(DType::F32, {4}, 1);
  EXPECT_EQ(jit::device_of_pointer(host.raw()), -1);
  // Page-locked host memory is host memory too (the driver knows it, as CU_MEMORYTYPE_HOST).
  void* pinned = nullptr;
  ASSERT_EQ(jit::driver().cuMemAllocHost(&pinned, 256), CUDA_SUCCESS);
  EXPECT_EQ(jit::device_of_pointer(pinned), -1);
  EXPECT_EQ(jit::driver().cuMemFreeHost(pinned), CUDA_SUCCESS);
}

}  // namespace
}  // namespace grape
