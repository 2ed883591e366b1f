//===- CudaTestSupport.h - Fixtures of the cuda runtime tests --*- C++ -*-===//
//
// Shared by CudaRuntimeTest.cpp and CudaDeviceRunTest.cpp: the fake driver's
// controls, the fake model's test case, and fixtures that load it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_RUNTIME_CUDATESTSUPPORT_H
#define KILN_TEST_RUNTIME_CUDATESTSUPPORT_H

#include "TestEnv.h"
#include "fake_cuda_driver.h"
#include "kiln-c/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <utility>
#include <vector>

namespace kiln_test {

inline std::string take(kiln_status_t *status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

/// The fake driver's test controls (the same library the runtime dlopens).
struct FakeDriver {
  void *library = nullptr;
  fake_cuda_get_stats_fn stats = nullptr;
  fake_cuda_reset_stats_fn reset = nullptr;
  fake_cuda_context_depth_fn depth = nullptr;
  fake_cuda_device_alloc_fn alloc = nullptr;
  fake_cuda_device_free_fn free = nullptr;
  fake_cuda_stream_create_fn streamCreate = nullptr;
  fake_cuda_stream_destroy_fn streamDestroy = nullptr;

  static FakeDriver &get() {
    static FakeDriver driver = [] {
      FakeDriver d;
      d.library = dlopen(KILN_TEST_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
      if (!d.library)
        return d;
      d.stats = reinterpret_cast<fake_cuda_get_stats_fn>(
          dlsym(d.library, "fake_cuda_get_stats"));
      d.reset = reinterpret_cast<fake_cuda_reset_stats_fn>(
          dlsym(d.library, "fake_cuda_reset_stats"));
      d.depth = reinterpret_cast<fake_cuda_context_depth_fn>(
          dlsym(d.library, "fake_cuda_context_depth"));
      d.alloc = reinterpret_cast<fake_cuda_device_alloc_fn>(
          dlsym(d.library, "fake_cuda_device_alloc"));
      d.free = reinterpret_cast<fake_cuda_device_free_fn>(
          dlsym(d.library, "fake_cuda_device_free"));
      d.streamCreate = reinterpret_cast<fake_cuda_stream_create_fn>(
          dlsym(d.library, "fake_cuda_stream_create"));
      d.streamDestroy = reinterpret_cast<fake_cuda_stream_destroy_fn>(
          dlsym(d.library, "fake_cuda_stream_destroy"));
      return d;
    }();
    return driver;
  }
};

inline constexpr float kWeight[4] = {0.5f, -1.0f, 10.0f, -100.0f};

/// x: f32 [n, 4] with values seeded by `seed`; the fake model computes
/// y = 2 * x + w[j], total = sum(y), pos = y[y > 0].
struct Case {
  int64_t n;
  std::vector<int64_t> xDims;
  std::vector<float> x, y, pos;
  float total = 0;

  Case(int64_t n, float seed) : n(n), xDims{n, 4} {
    for (int64_t i = 0; i < n * 4; ++i)
      x.push_back(seed * static_cast<float>(i % 7) - 3.0f +
                  static_cast<float>(i) * 0.25f);
    for (int64_t i = 0; i < n * 4; ++i) {
      float v = 2.0f * x[i] + kWeight[i % 4];
      y.push_back(v);
      total += v;
      if (v > 0)
        pos.push_back(v);
    }
  }
  std::vector<kiln_tensor_view_t> views() const {
    return {{KILN_DTYPE_F32, 2, xDims.data(), x.data()}};
  }
};

inline void expectFloats(const void *data, const std::vector<float> &want,
                         const char *what) {
  const float *got = static_cast<const float *>(data);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << what << "[" << i << "]";
}

class CudaFakeDriverTest : public ::testing::Test {
protected:
  void SetUp() override {
    driver = &FakeDriver::get();
    ASSERT_NE(driver->library, nullptr) << dlerror();
    ASSERT_NE(driver->stats, nullptr);
    env.set("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER);
    env.set("FAKE_CUDA_MODE", nullptr);
    env.set("KILN_CUDA_GRAPHS", nullptr);
    env.set("KILN_CUDA_DEPENDENT_LAUNCH", nullptr);
    env.set("KILN_CUDA_DEVICE", nullptr);
    env.set("KILN_CUDA_PROFILE", nullptr);
    before = driver->stats();
  }

  /// Everything the runtime allocated, retained or pushed was given back.
  void expectAllReleased() {
    fake_cuda_stats s = driver->stats();
    EXPECT_EQ(s.live_allocs, before.live_allocs);
    EXPECT_EQ(s.ctx_retains - before.ctx_retains,
              s.ctx_releases - before.ctx_releases);
    EXPECT_EQ(s.module_loads - before.module_loads,
              s.module_unloads - before.module_unloads);
    EXPECT_EQ(s.stream_creates - before.stream_creates,
              s.stream_destroys - before.stream_destroys);
    EXPECT_EQ(s.live_graphs, 0);
    EXPECT_EQ(s.live_graph_execs, 0);
    EXPECT_EQ(s.bad_pointers, before.bad_pointers);
    EXPECT_EQ(s.live_events, before.live_events);
    EXPECT_EQ(driver->depth(), 0);
  }

  FakeDriver *driver = nullptr;
  Env env;
  fake_cuda_stats before{};
};

class CudaRunTest : public CudaFakeDriverTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_MODEL);
  }
  void load(const char *path) {
    ASSERT_EQ(take(kiln_model_load(path, &model)), "");
    ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  }
  void TearDown() override {
    kiln_instance_release(instance);
    kiln_model_release(model);
    if (model)
      expectAllReleased();
  }

  /// Runs `c` through host tensors (two outputs); the status's text, ""
  /// when the run succeeded.
  std::string runStatus(const Case &c) {
    std::vector<kiln_tensor_view_t> in = c.views();
    std::vector<kiln_tensor_t *> out(2, nullptr);
    std::string status =
        take(kiln_instance_run(instance, in.data(), in.size(), out.data(), 2));
    for (kiln_tensor_t *t : out)
      kiln_tensor_release(t);
    return status;
  }

  /// Runs `c` through host tensors and checks the outputs.
  void runAndCheck(const Case &c) {
    std::vector<kiln_tensor_view_t> in = c.views();
    size_t numOutputs = kiln_model_num_outputs(model);
    std::vector<kiln_tensor_t *> out(numOutputs, nullptr);
    ASSERT_EQ(take(kiln_instance_run(instance, in.data(), in.size(), out.data(),
                                     out.size())),
              "");
    ASSERT_EQ(kiln_tensor_dims(out[0])[0], c.n);
    expectFloats(kiln_tensor_data(out[0]), c.y, "y");
    EXPECT_EQ(*static_cast<float *>(kiln_tensor_data(out[1])), c.total);
    if (numOutputs == 3) {
      ASSERT_EQ(kiln_tensor_dims(out[2])[0],
                static_cast<int64_t>(c.pos.size()));
      expectFloats(kiln_tensor_data(out[2]), c.pos, "pos");
    }
    for (kiln_tensor_t *t : out)
      kiln_tensor_release(t);
    EXPECT_EQ(driver->depth(), 0);
  }
  fake_cuda_stats delta() {
    fake_cuda_stats s = driver->stats();
    fake_cuda_stats d = s;
#define KILN_DELTA(f) d.f = s.f - before.f
    KILN_DELTA(module_loads);
    KILN_DELTA(function_lookups);
    KILN_DELTA(allocs);
    KILN_DELTA(htod);
    KILN_DELTA(htod_sync);
    KILN_DELTA(dtoh);
    KILN_DELTA(dtod);
    KILN_DELTA(launch_attempts);
    KILN_DELTA(launches);
    KILN_DELTA(dependent_launches);
    KILN_DELTA(kernel_runs);
    KILN_DELTA(syncs);
    KILN_DELTA(capture_attempts);
    KILN_DELTA(captures);
    KILN_DELTA(instantiations);
    KILN_DELTA(graph_launches);
    KILN_DELTA(bad_pointers);
    KILN_DELTA(host_allocs);
#undef KILN_DELTA
    return d;
  }

  kiln_model_t *model = nullptr;
  kiln_instance_t *instance = nullptr;
};

/// Device buffers from the fake driver, freed at the end of the test.
struct DeviceBuffers {
  FakeDriver *driver;
  std::vector<void *> buffers;
  void *alloc(size_t bytes) {
    buffers.push_back(driver->alloc(bytes));
    return buffers.back();
  }
  ~DeviceBuffers() {
    for (void *b : buffers)
      driver->free(b);
  }
};

} // namespace kiln_test

#endif // KILN_TEST_RUNTIME_CUDATESTSUPPORT_H
