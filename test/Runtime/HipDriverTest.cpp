//===- HipDriverTest.cpp - Kiln's HIP declarations against the real ones --===//
//
// lib/Runtime/Drivers/HIP/HipDriver.h declares the HIP entry points, error
// codes, flags and struct offsets Kiln uses without including HIP's
// headers. Here they are compared with hip/hip_runtime_api.h of HIP 5.x
// (Debian's libamdhip64-dev), and the library lookup runs against the real
// libamdhip64.so.5 of this machine and the fake ROCm 6 runtime
// (fake_hip_driver.c; its hipDeviceProp_tR0600 replica is checked by
// static asserts there).
//
//===----------------------------------------------------------------------===//
#include "HipDriver.h"

#include <hip/hip_runtime_api.h>

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdlib>
#include <string>

namespace {

TEST(HipDriverLayoutTest, DevicePropertiesOfHip5) {
  EXPECT_EQ(offsetof(hipDeviceProp_t, name), KILN_HIP_PROPS_NAME_OFFSET);
  EXPECT_EQ(offsetof(hipDeviceProp_t, gcnArchName),
            KILN_HIP_PROPS_R0000_ARCH_OFFSET);
  EXPECT_EQ(sizeof(hipDeviceProp_t), KILN_HIP_PROPS_R0000_SIZE);
  EXPECT_EQ(sizeof(hipDeviceProp_t::gcnArchName), 256u);
  // Both layouts, and fields a later ROCm may append, fit the buffer.
  EXPECT_LE(KILN_HIP_PROPS_R0000_SIZE, KILN_HIP_PROPS_BUFFER);
  EXPECT_LE(KILN_HIP_PROPS_R0600_ARCH_OFFSET + 256, KILN_HIP_PROPS_R0600_SIZE);
  EXPECT_LE(4 * KILN_HIP_PROPS_R0600_SIZE, KILN_HIP_PROPS_BUFFER);
}

TEST(HipDriverLayoutTest, ErrorCodesAndFlags) {
  EXPECT_EQ(KILN_HIP_SUCCESS, hipSuccess);
  EXPECT_EQ(KILN_HIP_ERROR_INVALID_VALUE, hipErrorInvalidValue);
  EXPECT_EQ(KILN_HIP_ERROR_OUT_OF_MEMORY, hipErrorOutOfMemory);
  EXPECT_EQ(KILN_HIP_ERROR_NOT_INITIALIZED, hipErrorNotInitialized);
  EXPECT_EQ(KILN_HIP_ERROR_NO_DEVICE, hipErrorNoDevice);
  EXPECT_EQ(KILN_HIP_ERROR_INVALID_DEVICE, hipErrorInvalidDevice);
  EXPECT_EQ(KILN_HIP_ERROR_INVALID_IMAGE, hipErrorInvalidImage);
  EXPECT_EQ(KILN_HIP_ERROR_NO_BINARY_FOR_GPU, hipErrorNoBinaryForGpu);
  EXPECT_EQ(KILN_HIP_ERROR_INVALID_HANDLE, hipErrorInvalidHandle);
  EXPECT_EQ(KILN_HIP_ERROR_NOT_FOUND, hipErrorNotFound);
  EXPECT_EQ(KILN_HIP_ERROR_LAUNCH_FAILURE, hipErrorLaunchFailure);
  EXPECT_EQ(KILN_HIP_ERROR_NOT_SUPPORTED, hipErrorNotSupported);
  EXPECT_EQ(KILN_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
            hipErrorStreamCaptureUnsupported);
  EXPECT_EQ(KILN_HIP_ERROR_STREAM_CAPTURE_INVALIDATED,
            hipErrorStreamCaptureInvalidated);
  EXPECT_EQ(KILN_HIP_STREAM_NON_BLOCKING, hipStreamNonBlocking);
  EXPECT_EQ(KILN_HIP_STREAM_CAPTURE_MODE_RELAXED, hipStreamCaptureModeRelaxed);
  EXPECT_EQ(KILN_HIP_HOST_MALLOC_FLAGS,
            static_cast<unsigned>(hipHostMallocPortable | hipHostMallocMapped |
                                  hipHostMallocCoherent));
  EXPECT_EQ(sizeof(kiln_hip_result), sizeof(hipError_t));
  EXPECT_EQ(sizeof(kiln_hip_ptr), sizeof(hipDeviceptr_t));
}

struct OpenDriver {
  kiln_hip_driver driver;
  std::string error;
  explicit OpenDriver(const char *path) {
    char text[512] = "";
    if (kiln_hip_driver_open(&driver, path, text, sizeof(text)) != 0)
      error = text;
  }
  ~OpenDriver() { kiln_hip_driver_close(&driver); }
};

// The real HIP 5.2 runtime: every entry point resolves, the properties come
// from the 5.x layout, error texts are the names, and without a GPU hipInit
// fails (it must not abort).
TEST(HipDriverOpenTest, RealHip5Runtime) {
  OpenDriver d("libamdhip64.so.5");
  ASSERT_EQ(d.error, "") << "utils/setup.sh installs libamdhip64-dev";
  EXPECT_STREQ(d.driver.props_symbol, "hipGetDeviceProperties");
  EXPECT_EQ(d.driver.props_arch_offset,
            static_cast<size_t>(KILN_HIP_PROPS_R0000_ARCH_OFFSET));
  char text[160];
  kiln_hip_error_text(&d.driver, KILN_HIP_ERROR_NO_BINARY_FOR_GPU, text,
                      sizeof(text));
  EXPECT_STREQ(text, "hipErrorNoBinaryForGpu");
  int devices = 0;
  if (d.driver.hipInit(0) == KILN_HIP_SUCCESS &&
      d.driver.hipGetDeviceCount(&devices) == KILN_HIP_SUCCESS && devices > 0)
    GTEST_SKIP() << "this machine has an AMD GPU";
  EXPECT_NE(d.driver.hipInit(0), KILN_HIP_SUCCESS);
}

TEST(HipDriverOpenTest, FakeRocm6Runtime) {
  unsetenv("FAKE_HIP_MODE");
  OpenDriver d(KILN_TEST_FAKE_HIP_DRIVER);
  ASSERT_EQ(d.error, "");
  EXPECT_STREQ(d.driver.props_symbol, "hipGetDevicePropertiesR0600");
  ASSERT_EQ(d.driver.hipInit(0), KILN_HIP_SUCCESS);
  char name[64], arch[64];
  ASSERT_EQ(kiln_hip_device_props(&d.driver, 0, name, sizeof(name), arch,
                                  sizeof(arch)),
            KILN_HIP_SUCCESS);
  EXPECT_STREQ(name, "Fake MI300X");
  EXPECT_STREQ(arch, "gfx942:sramecc+:xnack-");
  // Truncated to the caller's buffer.
  ASSERT_EQ(kiln_hip_device_props(&d.driver, 0, name, 5, arch, 7),
            KILN_HIP_SUCCESS);
  EXPECT_STREQ(name, "Fake");
  EXPECT_STREQ(arch, "gfx942");
  EXPECT_EQ(kiln_hip_device_props(&d.driver, 5, name, sizeof(name), arch,
                                  sizeof(arch)),
            KILN_HIP_ERROR_INVALID_DEVICE);
  EXPECT_STREQ(arch, "");
  char text[160];
  kiln_hip_error_text(&d.driver, 12345, text, sizeof(text));
  EXPECT_STREQ(text, "hipErrorUnknown (unknown error)");
}

TEST(HipDriverOpenTest, MissingLibraryAndSymbols) {
  OpenDriver missing("/nonexistent/libamdhip64.so.6");
  EXPECT_EQ(missing.error, "/nonexistent/libamdhip64.so.6: cannot open shared "
                           "object file: No such file or directory");
  EXPECT_EQ(missing.driver.library, nullptr);
  OpenDriver notHip(KILN_TEST_FAKE_MODEL);
  EXPECT_EQ(notHip.error,
            std::string(KILN_TEST_FAKE_MODEL) + " has no symbol hipInit");
  kiln_hip_driver closed{};
  char text[64];
  kiln_hip_error_text(&closed, 2, text, sizeof(text));
  EXPECT_STREQ(text, "HIP error 2");
}

} // namespace
