//===- HipRuntimeTest.cpp - Tests of the runtime's rocm models ------------===//
//
// Without an AMD GPU: fake_cuda_model.c built for the device kind "rocm"
// (chip gfx942) stands in for kilnc --target=rocm output and
// fake_hip_driver.c (loaded through KILN_ROCM_DRIVER or the driver_path
// option) for libamdhip64, running kernels on the host and counting what
// the runtime asks of it. One test loads a rocm model with the real HIP
// runtime of this machine (Debian's libamdhip64.so.5, no GPU): that must be
// a clean FAILED_PRECONDITION.
//
//===----------------------------------------------------------------------===//
#include "TestEnv.h"
#include "fake_hip_driver.h"
#include "kiln-c/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace kiln_test;

std::string take(kiln_status_t *status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

/// Loads `path` expecting failure; returns "<CODE>: <message>".
std::string loadError(const char *path, const char *driverPath = nullptr) {
  kiln_model_options_t options;
  kiln_model_options_init(&options);
  options.driver_path = driverPath;
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(8);
  kiln_status_t *status = kiln_model_load_with_options(path, &options, &model);
  EXPECT_EQ(model, nullptr);
  std::string code = kiln_status_code_name(kiln_status_code(status));
  return code + ": " + take(status);
}

/// A cpu model still loads and runs after a rocm model failed to load.
void expectCpuModelRuns() {
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_FAKE_MODEL, &model)), "");
  kiln_instance_t *instance = nullptr;
  ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  int64_t xDims[] = {1, 4}, biasDims[] = {1};
  float x[4] = {1, 2, 3, 4}, bias[1] = {10};
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, xDims, x},
                             {KILN_DTYPE_F32, 1, biasDims, bias}};
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  EXPECT_EQ(take(kiln_instance_run(instance, in, 2, out, 2)), "");
  if (out[0])
    EXPECT_EQ(static_cast<float *>(kiln_tensor_data(out[0]))[3], 18.0f);
  kiln_tensor_release(out[0]);
  kiln_tensor_release(out[1]);
  kiln_instance_release(instance);
  kiln_model_release(model);
}

/// The fake runtime's test controls (the same library the runtime opens).
struct FakeHip {
  void *library = nullptr;
  fake_hip_get_stats_fn stats = nullptr;
  fake_hip_reset_stats_fn reset = nullptr;
  fake_hip_current_device_fn device = nullptr;
  fake_hip_fail_alloc_after_fn failAllocAfter = nullptr;
  fake_hip_device_alloc_fn alloc = nullptr;
  fake_hip_device_free_fn free = nullptr;
  fake_hip_stream_create_fn streamCreate = nullptr;
  fake_hip_stream_destroy_fn streamDestroy = nullptr;

  template <typename T> void bind(T &fn, const char *name) {
    fn = reinterpret_cast<T>(dlsym(library, name));
  }
  explicit FakeHip(const char *path) {
    library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!library)
      return;
    bind(stats, "fake_hip_get_stats");
    bind(reset, "fake_hip_reset_stats");
    bind(device, "fake_hip_current_device");
    bind(failAllocAfter, "fake_hip_fail_alloc_after");
    bind(alloc, "fake_hip_device_alloc");
    bind(free, "fake_hip_device_free");
    bind(streamCreate, "fake_hip_stream_create");
    bind(streamDestroy, "fake_hip_stream_destroy");
  }
  static FakeHip &rocm6() {
    static FakeHip fake(KILN_TEST_FAKE_HIP_DRIVER);
    return fake;
  }
  static FakeHip &hip5() {
    static FakeHip fake(KILN_TEST_FAKE_HIP5_DRIVER);
    return fake;
  }
};

constexpr float kWeight[4] = {0.5f, -1.0f, 10.0f, -100.0f};

/// x: f32 [3, 4] seeded by `seed`; the fake model computes y = 2 * x + w[j]
/// and total = sum(y).
struct Case {
  std::vector<int64_t> xDims{3, 4};
  std::vector<float> x, y;
  float total = 0;
  explicit Case(float seed) {
    for (int i = 0; i < 12; ++i) {
      x.push_back(seed * static_cast<float>(i % 7) - 3.0f +
                  static_cast<float>(i) * 0.25f);
      y.push_back(2.0f * x.back() + kWeight[i % 4]);
      total += y.back();
    }
  }
};

void expectFloats(const void *data, const std::vector<float> &want) {
  const float *got = static_cast<const float *>(data);
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "y[" << i << "]";
}

class HipFakeTest : public ::testing::Test {
protected:
  void SetUp() override { use(FakeHip::rocm6(), KILN_TEST_FAKE_HIP_DRIVER); }
  void use(FakeHip &fake, const char *path) {
    hip = &fake;
    driverPath = path;
    ASSERT_NE(hip->library, nullptr) << dlerror();
    ASSERT_NE(hip->stats, nullptr);
    env.set("KILN_ROCM_DRIVER", path);
    env.set("FAKE_HIP_MODE", nullptr);
    env.set("KILN_ROCM_GRAPHS", nullptr);
    env.set("KILN_ROCM_DEVICE", nullptr);
    env.set("KILN_ROCM_PROFILE", nullptr);
    hip->failAllocAfter(-1);
    before = hip->stats();
  }
  void TearDown() override {
    kiln_instance_release(instance);
    kiln_model_release(model);
    if (hip && hip->library) {
      hip->failAllocAfter(-1);
      expectAllReleased();
    }
  }
  void load(const char *path = KILN_TEST_ROCM_MODEL) {
    ASSERT_EQ(take(kiln_model_load(path, &model)), "");
    ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  }

  /// Everything the runtime allocated, loaded or created was given back,
  /// always with the right device current, and the thread's device is
  /// restored.
  void expectAllReleased() {
    fake_hip_stats s = hip->stats();
    EXPECT_EQ(s.live_allocs, before.live_allocs);
    EXPECT_EQ(s.module_loads - before.module_loads,
              s.module_unloads - before.module_unloads);
    EXPECT_EQ(s.stream_creates - before.stream_creates,
              s.stream_destroys - before.stream_destroys);
    EXPECT_EQ(s.live_graphs, 0);
    EXPECT_EQ(s.live_graph_execs, 0);
    EXPECT_EQ(s.bad_pointers, before.bad_pointers);
    EXPECT_EQ(s.wrong_device, before.wrong_device);
    EXPECT_EQ(hip->device(), 0);
  }
  fake_hip_stats delta() {
    fake_hip_stats s = hip->stats(), d = s;
#define KILN_DELTA(f) d.f = s.f - before.f
    KILN_DELTA(props_r0600);
    KILN_DELTA(props_r0000);
    KILN_DELTA(module_loads);
    KILN_DELTA(function_lookups);
    KILN_DELTA(allocs);
    KILN_DELTA(allocs_on_device1);
    KILN_DELTA(host_allocs);
    KILN_DELTA(htod);
    KILN_DELTA(htod_sync);
    KILN_DELTA(dtoh);
    KILN_DELTA(dtod);
    KILN_DELTA(launch_attempts);
    KILN_DELTA(launches);
    KILN_DELTA(kernel_runs);
    KILN_DELTA(capture_attempts);
    KILN_DELTA(captures);
    KILN_DELTA(instantiations);
    KILN_DELTA(graph_launches);
    KILN_DELTA(wrong_device);
#undef KILN_DELTA
    return d;
  }

  /// Runs `c` through host tensors; returns the status ("" and the outputs
  /// checked on success).
  std::string run(const Case &c) {
    kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), c.x.data()}};
    kiln_tensor_t *out[2] = {nullptr, nullptr};
    std::string status = take(kiln_instance_run(instance, in, 1, out, 2));
    if (status.empty()) {
      expectFloats(kiln_tensor_data(out[0]), c.y);
      EXPECT_EQ(*static_cast<float *>(kiln_tensor_data(out[1])), c.total);
    }
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
    EXPECT_EQ(hip->device(), 0);
    return status;
  }

  FakeHip *hip = nullptr;
  const char *driverPath = nullptr;
  Env env;
  fake_hip_stats before{};
  kiln_model_t *model = nullptr;
  kiln_instance_t *instance = nullptr;
};

//===----------------------------------------------------------------------===//
// Loading: no library, no device, wrong device
//===----------------------------------------------------------------------===//

TEST(HipLoadTest, LibraryMissingAtDriverPath) {
  Env env;
  env.set("KILN_ROCM_DRIVER", nullptr);
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL, "/nonexistent/libamdhip64.so.6"),
            "FAILED_PRECONDITION: model compiled for rocm gfx942: cannot load "
            "the HIP runtime (/nonexistent/libamdhip64.so.6: cannot open "
            "shared object file: No such file or directory)");
  expectCpuModelRuns();
}

TEST(HipLoadTest, LibraryWithoutEntryPoints) {
  Env env;
  env.set("KILN_ROCM_DRIVER", KILN_TEST_FAKE_MODEL); // a library, not HIP
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            std::string("FAILED_PRECONDITION: model compiled for rocm gfx942: "
                        "cannot load the HIP runtime (") +
                KILN_TEST_FAKE_MODEL + " has no symbol hipInit)");
}

// CI's case: the HIP runtime is installed (utils/setup.sh installs
// libamdhip64-dev) but there is no AMD GPU. The default library lookup
// finds it and the model fails to load with a status, not a crash.
TEST(HipLoadTest, RealRuntimeWithoutGpu) {
  Env env;
  env.set("KILN_ROCM_DRIVER", nullptr);
  env.set("KILN_ROCM_DEVICE", nullptr);
  const char *found = nullptr;
  for (const char *name :
       {"libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"})
    // Never unloaded (as the driver opens it): the runtime's state
    // outlives the test.
    if (void *library = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
      found = name;
      using InitFn = int (*)(unsigned);
      using CountFn = int (*)(int *);
      auto init = reinterpret_cast<InitFn>(dlsym(library, "hipInit"));
      auto count =
          reinterpret_cast<CountFn>(dlsym(library, "hipGetDeviceCount"));
      int devices = 0;
      bool gpu =
          init && count && init(0) == 0 && count(&devices) == 0 && devices > 0;
      dlclose(library);
      if (gpu)
        GTEST_SKIP() << "this machine has an AMD GPU (" << name << ")";
      break;
    }
  ASSERT_NE(found, nullptr)
      << "no HIP runtime (libamdhip64.so.7/.6/.5) is installed; "
         "utils/setup.sh installs libamdhip64-dev";
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string error = loadError(KILN_TEST_ROCM_MODEL);
    std::string want = std::string("FAILED_PRECONDITION: model compiled for "
                                   "rocm gfx942: no AMD GPU found by the HIP "
                                   "runtime (") +
                       found + "): ";
    EXPECT_EQ(error.rfind(want, 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  expectCpuModelRuns();
}

TEST_F(HipFakeTest, InitFails) {
  env.set("FAKE_HIP_MODE", "initfail");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            std::string("FAILED_PRECONDITION: model compiled for rocm gfx942: "
                        "no AMD GPU found by the HIP runtime (") +
                driverPath +
                "): hipInit failed: hipErrorInvalidDevice (invalid device "
                "ordinal)");
  expectCpuModelRuns();
}

TEST_F(HipFakeTest, NoDevice) {
  std::string prefix = std::string("FAILED_PRECONDITION: model compiled for "
                                   "rocm gfx942: no AMD GPU found by the HIP "
                                   "runtime (") +
                       driverPath + "): ";
  env.set("FAKE_HIP_MODE", "nodevice");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            prefix + "hipGetDeviceCount failed: hipErrorNoDevice (no "
                     "ROCm-capable device is detected)");
  env.set("FAKE_HIP_MODE", "zerodevices");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL), prefix + "it has 0 devices");
}

TEST_F(HipFakeTest, WrongArchitecture) {
  env.set("FAKE_HIP_MODE", "gfx90a");
  EXPECT_EQ(
      loadError(KILN_TEST_ROCM_MODEL),
      "FAILED_PRECONDITION: model compiled for rocm gfx942: HIP device 0 (Fake "
      "MI210) is a gfx90a (gfx90a:sramecc+:xnack-), the model needs "
      "gfx942; recompile it with kilnc --target=rocm:gfx90a");
  expectCpuModelRuns();
}

TEST_F(HipFakeTest, NoArchitectureName) {
  env.set("FAKE_HIP_MODE", "noarch");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            std::string("FAILED_PRECONDITION: model compiled for rocm gfx942: "
                        "HIP device 0 (Fake MI300X) has no architecture name: "
                        "gcnArchName is '' (hipGetDevicePropertiesR0600 of ") +
                driverPath + ")");
}

TEST_F(HipFakeTest, BadDeviceIndex) {
  env.set("KILN_ROCM_DEVICE", "3");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            "FAILED_PRECONDITION: model compiled for rocm gfx942: "
            "KILN_ROCM_DEVICE is '3', expected a device index below 1");
}

TEST_F(HipFakeTest, UnknownChip) {
  EXPECT_EQ(loadError(KILN_TEST_ROCM_BAD_CHIP_MODEL),
            "INCOMPATIBLE: model compiled for rocm 'sm_90': unknown chip "
            "(expected gfx<N>, e.g. gfx90a or gfx942)");
}

TEST_F(HipFakeTest, CodeObjectForAnotherTarget) {
  kiln_model_t *loaded = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_ROCM_MODEL, &loaded)), "");
  env.set("FAKE_HIP_MODE", "nobinary");
  kiln_instance_t *created = reinterpret_cast<kiln_instance_t *>(8);
  kiln_status_t *status = kiln_instance_create(loaded, &created);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(take(status),
            "model compiled for rocm gfx942: hipModuleLoadData of its 66-byte "
            "device image failed: hipErrorNoBinaryForGpu (no kernel image is "
            "available for execution on the device): the image has no code "
            "object that HIP device 0 (Fake MI300X, gfx942:sramecc+:xnack-) "
            "runs; its target features (xnack, sramecc) must match the "
            "device's");
  EXPECT_EQ(created, nullptr);
  kiln_model_release(loaded);
}

TEST_F(HipFakeTest, ProfilingIsNotImplemented) {
  kiln_model_t *loaded = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_ROCM_MODEL, &loaded)), "");
  kiln_instance_options_t options;
  kiln_instance_options_init(&options);
  options.profile_path = "/tmp/unused.jsonl";
  kiln_instance_t *created = nullptr;
  kiln_status_t *status =
      kiln_instance_create_with_options(loaded, &options, &created);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(take(status),
            "model compiled for rocm gfx942: per-kernel times (the "
            "profile_path option) are not implemented by the HIP driver; use "
            "rocprofv3 instead");
  // kiln_instance_set_profiling likewise (the driver has no timing).
  ASSERT_EQ(take(kiln_instance_create(loaded, &created)), "");
  status = kiln_instance_set_profiling(created, KILN_PROFILE_KERNELS);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_UNIMPLEMENTED);
  EXPECT_EQ(take(status),
            "model compiled for rocm gfx942: kernel and phase times "
            "(kiln_instance_set_profiling) are not implemented by its device "
            "driver");
  EXPECT_EQ(take(kiln_instance_set_profiling(created, KILN_PROFILE_OFF)), "");
  kiln_instance_release(created);
  kiln_model_release(loaded);
}

TEST_F(HipFakeTest, ArenaAllocationFails) {
  kiln_model_t *loaded = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_ROCM_MODEL, &loaded)), "");
  env.set("FAKE_HIP_MODE", "oom");
  kiln_instance_t *created = nullptr;
  kiln_status_t *status = kiln_instance_create(loaded, &created);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(take(status), "hipMalloc of the 64-byte instance arena failed: "
                          "hipErrorOutOfMemory (out of memory)");
  kiln_model_release(loaded);
}

//===----------------------------------------------------------------------===//
// Runs
//===----------------------------------------------------------------------===//

TEST_F(HipFakeTest, DeviceNameAndLayout) {
  load();
  EXPECT_STREQ(kiln_model_device(model), "rocm:gfx942");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.props_r0600, 1); // ROCm 6's layout where the library has it
  EXPECT_EQ(d.props_r0000, 0);
}

TEST_F(HipFakeTest, PlainRunsStageAndCache) {
  load();
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  for (float seed : {1.0f, -2.0f, 0.5f})
    ASSERT_EQ(run(Case(seed)), "");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.module_loads, 1);     // at kiln_instance_create
  EXPECT_EQ(d.function_lookups, 2); // each kernel once
  EXPECT_EQ(d.htod_sync, 1);        // the weight, once
  EXPECT_EQ(d.htod, 1 + 3);         // + the input, every run
  EXPECT_EQ(d.dtoh, 2 * 3);         // both outputs, every run
  EXPECT_EQ(d.dtod, 3);             // the model's kiln_rt_copy_device
  EXPECT_EQ(d.kernel_runs, 2 * 3);
  EXPECT_EQ(d.allocs, 6); // arena, weight, scratch, input, 2 outputs
  EXPECT_EQ(d.captures, 0);
}

TEST_F(HipFakeTest, GraphCaptureAndReplay) {
  load();
  ASSERT_EQ(run(Case(1.0f)), ""); // plain: uploads, lookups, allocations
  EXPECT_EQ(delta().captures, 0);
  ASSERT_EQ(run(Case(2.0f)), ""); // captured and launched
  fake_hip_stats d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.instantiations, 1);
  EXPECT_EQ(d.graph_launches, 1);
  ASSERT_EQ(run(Case(-1.0f)), ""); // replays with new inputs
  ASSERT_EQ(run(Case(4.0f)), "");
  d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.graph_launches, 3);
  EXPECT_EQ(d.launches, 4); // kiln_model_main no longer runs
  EXPECT_EQ(d.kernel_runs, 8);
  EXPECT_EQ(d.htod_sync, 1);
}

TEST_F(HipFakeTest, CaptureFailureFallsBackToPlainRuns) {
  load();
  env.set("FAKE_HIP_MODE", "nocapture");
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(run(Case(static_cast<float>(i))), "");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.capture_attempts, 1); // remembered
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.kernel_runs, 8);
}

TEST_F(HipFakeTest, InstantiationFailureFallsBackToPlainRuns) {
  load();
  env.set("FAKE_HIP_MODE", "noinstantiate");
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run(Case(static_cast<float>(i))), "");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.instantiations, 0);
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.kernel_runs, 6);
}

TEST_F(HipFakeTest, LaunchFailureNamesTheKernel) {
  load();
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  env.set("FAKE_HIP_MODE", "launchfail");
  Case c(1.0f);
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), c.x.data()}};
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  kiln_status_t *status = kiln_instance_run(instance, in, 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INTERNAL);
  EXPECT_EQ(take(status),
            "model run failed: hipModuleLaunchKernel(kernel 0 'scale', grid "
            "1x1x1, block 64x1x1) failed: hipErrorLaunchFailure (unspecified "
            "launch failure)");
  EXPECT_EQ(out[0], nullptr);
  EXPECT_EQ(delta().launch_attempts, 1); // the second launch did nothing
  EXPECT_EQ(hip->device(), 0);
  env.set("FAKE_HIP_MODE", nullptr);
  EXPECT_EQ(run(c), "");
}

TEST_F(HipFakeTest, FunctionLookupFailure) {
  load();
  env.set("FAKE_HIP_MODE", "nofunction");
  EXPECT_EQ(run(Case(1.0f)),
            "model run failed: hipModuleGetFunction(kernel 0 'scale') failed: "
            "hipErrorNotFound (named symbol not found)");
  env.set("FAKE_HIP_MODE", nullptr);
  EXPECT_EQ(run(Case(1.0f)), "");
}

// Out of memory while uploading the weights: the input's buffer is the run's
// first allocation, the weight's the second.
TEST_F(HipFakeTest, OutOfMemoryForTheWeights) {
  load();
  hip->failAllocAfter(1);
  Case c(1.0f);
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), c.x.data()}};
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  kiln_status_t *status = kiln_instance_run(instance, in, 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(take(status), "model run failed: hipMalloc of weight 0 (16 "
                          "bytes) failed: hipErrorOutOfMemory (out of "
                          "memory)");
  EXPECT_EQ(delta().htod_sync, 0);
  hip->failAllocAfter(-1);
  EXPECT_EQ(run(c), "");
  EXPECT_EQ(delta().htod_sync, 1);
}

TEST_F(HipFakeTest, CallerStreamAndDeviceBuffers) {
  load();
  void *stream = hip->streamCreate(0);
  ASSERT_EQ(take(kiln_instance_set_stream(instance, stream)), "");
  std::vector<void *> buffers = {hip->alloc(64), hip->alloc(64),
                                 hip->alloc(64)};
  for (int runIndex = 0; runIndex < 4; ++runIndex) {
    Case c(static_cast<float>(runIndex));
    std::memcpy(buffers[0], c.x.data(), 48);
    int64_t yDims[] = {3, 4};
    kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), buffers[0]}};
    kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, buffers[1]},
                                {KILN_DTYPE_F32, 0, nullptr, buffers[2]}};
    ASSERT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)), "")
        << "run " << runIndex;
    expectFloats(buffers[1], c.y);
    EXPECT_EQ(*static_cast<float *>(buffers[2]), c.total);
    EXPECT_EQ(hip->stats().last_launch_stream, stream) << "run " << runIndex;
    EXPECT_EQ(hip->device(), 0);
  }
  fake_hip_stats d = delta();
  EXPECT_EQ(d.captures, 1);       // run 1, on the caller's stream
  EXPECT_EQ(d.graph_launches, 3); // runs 1 to 3
  EXPECT_EQ(d.dtoh, 0);           // in place
  ASSERT_EQ(take(kiln_instance_set_stream(instance, nullptr)), "");
  EXPECT_EQ(run(Case(9.0f)), "");
  for (void *b : buffers)
    hip->free(b);
  hip->streamDestroy(stream);
}

TEST_F(HipFakeTest, DeviceChecksThroughMappedHostMemory) {
  load(KILN_TEST_ROCM_CHECK_MODEL);
  for (int graphs : {0, 1}) {
    ASSERT_EQ(take(kiln_instance_set_graphs(instance, graphs)), "");
    for (int runIndex = 0; runIndex < 4; ++runIndex) {
      bool bad = runIndex == 2;
      Case c(bad ? 600.0f : 1.0f);
      kiln_tensor_view_t in[] = {
          {KILN_DTYPE_F32, 2, c.xDims.data(), c.x.data()}};
      kiln_tensor_t *out[2] = {nullptr, nullptr};
      kiln_status_t *status = kiln_instance_run(instance, in, 1, out, 2);
      if (!bad) {
        EXPECT_EQ(take(status), "") << "run " << runIndex;
      } else {
        EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
        EXPECT_EQ(take(status), "model run failed: node 'big' (Check, opset "
                                "1): y[0, 1] is 1193, above 1000");
      }
      kiln_tensor_release(out[0]);
      kiln_tensor_release(out[1]);
    }
  }
  fake_hip_stats d = delta();
  EXPECT_EQ(d.host_allocs, 1); // one record per instance, kept
  EXPECT_GE(d.graph_launches, 1);
}

// The model on device 1 of two (device 0 is a gfx90a): every call is made
// with device 1 current, and the thread's device 0 is restored after each.
TEST_F(HipFakeTest, SecondDevice) {
  env.set("FAKE_HIP_MODE", "twodevices");
  EXPECT_EQ(
      loadError(KILN_TEST_ROCM_MODEL),
      "FAILED_PRECONDITION: model compiled for rocm gfx942: HIP device 0 (Fake "
      "MI210) is a gfx90a (gfx90a:sramecc+:xnack-), the model needs "
      "gfx942; recompile it with kilnc --target=rocm:gfx90a");
  env.set("KILN_ROCM_DEVICE", "1");
  load();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run(Case(static_cast<float>(i))), "");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.allocs_on_device1, d.allocs);
  EXPECT_EQ(d.wrong_device, 0);
  EXPECT_EQ(d.graph_launches, 2); // run 1 captured, run 2 replayed
}

TEST_F(HipFakeTest, ConcurrentInstances) {
  load();
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      kiln_instance_t *mine = nullptr;
      if (kiln_status_t *status = kiln_instance_create(model, &mine)) {
        kiln_status_free(status);
        ++failures;
        return;
      }
      for (int iter = 0; iter < 20; ++iter) {
        Case c(static_cast<float>(t * 100 + iter));
        kiln_tensor_view_t in[] = {
            {KILN_DTYPE_F32, 2, c.xDims.data(), c.x.data()}};
        kiln_tensor_t *out[2] = {nullptr, nullptr};
        if (kiln_status_t *status = kiln_instance_run(mine, in, 1, out, 2)) {
          kiln_status_free(status);
          ++failures;
          continue;
        }
        const float *y = static_cast<const float *>(kiln_tensor_data(out[0]));
        for (size_t i = 0; i < c.y.size(); ++i)
          failures += y[i] != c.y[i];
        kiln_tensor_release(out[0]);
        kiln_tensor_release(out[1]);
      }
      kiln_instance_release(mine);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(delta().graph_launches, 4 * 19);
}

//===----------------------------------------------------------------------===//
// A HIP 5.x runtime (hipGetDeviceProperties, the 5.x layout; error strings
// that are the names)
//===----------------------------------------------------------------------===//

class Hip5FakeTest : public HipFakeTest {
protected:
  void SetUp() override { use(FakeHip::hip5(), KILN_TEST_FAKE_HIP5_DRIVER); }
};

TEST_F(Hip5FakeTest, RunsWithTheOldLayout) {
  load();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(run(Case(static_cast<float>(i))), "");
  fake_hip_stats d = delta();
  EXPECT_EQ(d.props_r0000, 1);
  EXPECT_EQ(d.props_r0600, 0);
  EXPECT_EQ(d.graph_launches, 2);
}

TEST_F(Hip5FakeTest, ArchitectureFromTheOldLayout) {
  env.set("FAKE_HIP_MODE", "gfx90a");
  EXPECT_EQ(
      loadError(KILN_TEST_ROCM_MODEL),
      "FAILED_PRECONDITION: model compiled for rocm gfx942: HIP device 0 (Fake "
      "MI210) is a gfx90a (gfx90a:sramecc+:xnack-), the model needs "
      "gfx942; recompile it with kilnc --target=rocm:gfx90a");
}

TEST_F(Hip5FakeTest, ErrorNamesWithoutText) {
  env.set("FAKE_HIP_MODE", "initfail");
  EXPECT_EQ(loadError(KILN_TEST_ROCM_MODEL),
            std::string("FAILED_PRECONDITION: model compiled for rocm gfx942: "
                        "no AMD GPU found by the HIP runtime (") +
                driverPath + "): hipInit failed: hipErrorInvalidDevice");
}

} // namespace
