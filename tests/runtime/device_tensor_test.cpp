// Device tensors on the CPU backend (no GPU needed): a tensor that says it lives in GPU memory is
// refused by name before anything reads it, and device buffers and caller streams are the CUDA
// backend's (ErrorCode::Unsupported, saying so).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "base/error.h"
#include "runtime/model.h"

namespace grape {
namespace {

auto chain_model() {
  return Model::load_source("fn main(x: f32[B, 4]) -> f32[B, 4] {\n  return softmax(x, axis=-1)\n}\n",
                            "chain.grp");
}

TEST(DeviceTensor, CpuSessionRefusesItWithoutReadingIt) {
  Session cpu(chain_model(), SessionOptions{"main", "cpu", "auto", 0});
  // An address no host code may read: a run that dereferenced it would crash, not throw.
  void* nowhere = reinterpret_cast<void*>(uintptr_t{16});
  Tensor x = Tensor::wrap_device(DType::F32, {2, 4}, nowhere, nullptr);
  ASSERT_TRUE(x.on_device());
  try {
    cpu.run({{"x", x}});
    FAIL() << "the CPU backend ran a device input";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("input 'x' is in GPU memory"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(Tensor::wrap(DType::F32, {2, 4}, nowhere, nullptr).on_device());
  EXPECT_FALSE(Tensor::wrap_device(DType::F32, {0, 4}, nullptr, nullptr).on_device()) << "empty: no memory";
}

TEST(DeviceTensor, BuffersAndStreamsAreTheCudaBackends) {
  Session cpu(chain_model(), SessionOptions{"main", "cpu", "auto", 0});
  EXPECT_EQ(cpu.device(), -1);
  try {
    cpu.device_tensor(DType::F32, {2, 4});
    FAIL() << "a device buffer on the CPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
    EXPECT_NE(std::string(e.what()).find("CUDA backend"), std::string::npos) << e.what();
  }
  cpu.set_stream(nullptr);
  int fake = 0;
  try {
    cpu.set_stream(&fake);
    FAIL() << "a stream on the CPU backend";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Unsupported);
  }
}

}  // namespace
}  // namespace grape
