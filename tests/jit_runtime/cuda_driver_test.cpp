#include "jit/cuda_driver.h"

#include <gtest/gtest.h>

#include "base/error.h"

namespace grape::jit {
namespace {

// These run on the CI machine, which has no GPU; on a GPU machine they check the other side.
TEST(CudaDriver, AvailabilityAgreesWithDriver) {
  std::string why;
  bool available = driver_available(&why);
  if (available) {
    EXPECT_EQ(why, "");
    EXPECT_NO_THROW(driver());
    EXPECT_GE(driver().version, 12000);
    return;
  }
  try {
    driver();
    FAIL() << "driver() returned without a driver";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NoDevice);
    EXPECT_EQ(std::string(e.what()), why);
  }
}

TEST(CudaDriver, WithoutLibcudaSaysNoCudaDriverFound) {
  std::string why;
  if (driver_available(&why)) GTEST_SKIP() << "this machine has a CUDA driver";
  if (why.find("libcuda.so.1") == std::string::npos)
    GTEST_SKIP() << "libcuda.so.1 loads but is unusable: " << why;
  EXPECT_EQ(why.rfind("no CUDA driver found (", 0), 0u) << why;
  try {
    driver();
    FAIL() << "driver() returned without a driver";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::NoDevice);
    EXPECT_NE(std::string(e.what()).find("no CUDA driver found (libcuda.so.1"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(Device(0), Error);
  EXPECT_THROW(Device::count(), Error);
}

// GRAPE_SMEM_CARVEOUT's values: unset, empty and -1 leave the split to the driver; 0-100 are
// percentages; anything else names the variable and the value.
TEST(CudaDriver, SharedMemoryCarveoutSwitchTakesOnlyPercentages) {
  EXPECT_EQ(parse_smem_carveout(nullptr), -1);
  EXPECT_EQ(parse_smem_carveout(""), -1);
  EXPECT_EQ(parse_smem_carveout("-1"), -1);
  EXPECT_EQ(parse_smem_carveout("0"), 0);
  EXPECT_EQ(parse_smem_carveout("100"), 100);
  for (const char* bad : {"101", "-2", "50%", "abc", "1e2", "99999999999999999999"}) {
    try {
      parse_smem_carveout(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find(
                    std::string("GRAPE_SMEM_CARVEOUT must be an integer from -1 to 100, got '") + bad + "'"),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(CudaDriver, CheckNamesTheCallAndWhatItWasFor) {
  EXPECT_NO_THROW(check(CUDA_SUCCESS, "cuLaunchKernel", "kernel k_12 (add)"));
  try {
    check(CUDA_ERROR_INVALID_VALUE, "cuLaunchKernel", "kernel k_12 (add)");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Device);
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("cuLaunchKernel failed for kernel k_12 (add): ", 0), 0u) << m;
    if (driver_available()) {
      EXPECT_EQ(m, "cuLaunchKernel failed for kernel k_12 (add): CUDA_ERROR_INVALID_VALUE: invalid argument");
    } else {
      EXPECT_EQ(m, "cuLaunchKernel failed for kernel k_12 (add): CUDA error 1");
    }
  }
}

TEST(CudaDriver, CheckMapsErrorCodes) {
  auto code_of = [](CUresult r) {
    try {
      check(r, "cuMemAlloc", "");
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("cuMemAlloc failed: ", 0), 0u) << e.what();
      return e.code();
    }
    return ErrorCode::Internal;
  };
  EXPECT_EQ(code_of(CUDA_ERROR_OUT_OF_MEMORY), ErrorCode::OutOfMemory);
  EXPECT_EQ(code_of(CUDA_ERROR_NO_DEVICE), ErrorCode::NoDevice);
  EXPECT_EQ(code_of(CUDA_ERROR_LAUNCH_FAILED), ErrorCode::Device);
  EXPECT_EQ(code_of(CUDA_ERROR_ILLEGAL_ADDRESS), ErrorCode::Device);
}

}  // namespace
}  // namespace grape::jit
