//===- CudaRuntimeTest.cpp - Tests of the runtime's cuda models -----------===//
//
// Without a GPU: fake_cuda_model.c stands in for kilnc --target=cuda output
// and fake_cuda_driver.c (loaded through KILN_CUDA_DRIVER) for libcuda.so.1,
// running kernels on the host and counting what the runtime asks of it.
//
//===----------------------------------------------------------------------===//
#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

namespace {

using namespace kiln_test;

//===----------------------------------------------------------------------===//
// Loading: no driver, no device, wrong device
//===----------------------------------------------------------------------===//

/// Loads `path` expecting failure; returns "<CODE>: <message>".
std::string loadError(const char *path) {
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(8);
  kiln_status_t *status = kiln_model_load(path, &model);
  EXPECT_EQ(model, nullptr);
  std::string code = kiln_status_code_name(kiln_status_code(status));
  return code + ": " + take(status);
}

/// A cpu model still loads and runs after a cuda model failed to load.
void expectCpuModelRuns() {
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_FAKE_MODEL, &model)), "");
  EXPECT_STREQ(kiln_model_device(model), "cpu");
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

TEST(CudaLoadTest, NoDriverAtPath) {
  Env env;
  env.set("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: cannot load "
            "the CUDA driver (/nonexistent/libcuda.so.1: cannot open shared "
            "object file: No such file or directory)");
  expectCpuModelRuns();
}

TEST(CudaLoadTest, NoDefaultDriver) {
  Env env;
  env.set("KILN_CUDA_DRIVER", nullptr);
  if (void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(real);
    GTEST_SKIP() << "this machine has libcuda.so.1";
  }
  std::string error = loadError(KILN_TEST_CUDA_MODEL);
  EXPECT_EQ(error.rfind("FAILED_PRECONDITION: model compiled for cuda sm_90: "
                        "cannot load the CUDA driver (libcuda.so.1: ",
                        0),
            0u)
      << error;
  expectCpuModelRuns();
}

TEST(CudaLoadTest, DriverWithoutEntryPoints) {
  Env env;
  env.set("KILN_CUDA_DRIVER", KILN_TEST_FAKE_MODEL); // a library, not libcuda
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            std::string("FAILED_PRECONDITION: model compiled for cuda sm_90: "
                        "cannot load the CUDA driver (") +
                KILN_TEST_FAKE_MODEL + " has no symbol cuInit)");
}

TEST_F(CudaFakeDriverTest, InitFails) {
  env.set("FAKE_CUDA_MODE", "initfail");
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: cuInit "
            "failed: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is "
            "detected)");
  expectCpuModelRuns();
}

TEST_F(CudaFakeDriverTest, NoDevice) {
  env.set("FAKE_CUDA_MODE", "nodevice");
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: no CUDA "
            "device");
}

TEST_F(CudaFakeDriverTest, ComputeCapabilityTooLow) {
  env.set("FAKE_CUDA_MODE", "cc80");
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: CUDA device "
            "0 (Fake A100) has compute capability 8.0, the model needs sm_90 "
            "(compute capability 9.0 or newer)");
}

TEST_F(CudaFakeDriverTest, ArchitectureSpecificChip) {
  EXPECT_EQ(loadError(KILN_TEST_CUDA_SM100A_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_100a: CUDA "
            "device 0 (Fake H200) has compute capability 9.0, the model needs "
            "sm_100a (compute capability 10.0 exactly)");
}

TEST_F(CudaFakeDriverTest, BadDeviceIndex) {
  env.set("KILN_CUDA_DEVICE", "3");
  EXPECT_EQ(loadError(KILN_TEST_CUDA_MODEL),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: "
            "KILN_CUDA_DEVICE is '3', expected a device index below 1");
}

TEST_F(CudaFakeDriverTest, NoDeviceImage) {
  EXPECT_EQ(loadError(KILN_TEST_CUDA_NO_IMAGE_MODEL),
            "INCOMPATIBLE: model compiled for cuda sm_90 has 2 kernels but no "
            "device image (kiln_model_device_image)");
}

// A model of copies only has no kernels and no device image.
TEST_F(CudaFakeDriverTest, ModelWithoutKernels) {
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_CUDA_COPY_MODEL, &model)), "");
  kiln_instance_t *instance = nullptr;
  ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  for (int run = 0; run < 4; ++run) {
    Case c(3, static_cast<float>(run));
    std::vector<kiln_tensor_view_t> in = c.views();
    kiln_tensor_t *out = nullptr;
    ASSERT_EQ(take(kiln_instance_run(instance, in.data(), 1, &out, 1)), "");
    expectFloats(kiln_tensor_data(out), c.x, "y");
    kiln_tensor_release(out);
  }
  fake_cuda_stats s = driver->stats();
  EXPECT_EQ(s.module_loads - before.module_loads, 0);
  EXPECT_EQ(s.graph_launches - before.graph_launches, 3); // runs 2 to 4
  kiln_instance_release(instance);
  kiln_model_release(model);
  expectAllReleased();
}

TEST_F(CudaFakeDriverTest, ModuleLoadFails) {
  env.set("FAKE_CUDA_MODE", "badimage");
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_CUDA_MODEL, &model)), "");
  kiln_instance_t *instance = reinterpret_cast<kiln_instance_t *>(8);
  kiln_status_t *status = kiln_instance_create(model, &instance);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(take(status),
            "model compiled for cuda sm_90: cuModuleLoadData of its 66-byte "
            "device image failed: CUDA_ERROR_INVALID_IMAGE (device kernel "
            "image is invalid)");
  EXPECT_EQ(instance, nullptr);
  kiln_model_release(model);
  expectAllReleased();
}

TEST_F(CudaFakeDriverTest, ArenaAllocationFails) {
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_CUDA_MODEL, &model)), "");
  env.set("FAKE_CUDA_MODE", "oom");
  kiln_instance_t *instance = nullptr;
  kiln_status_t *status = kiln_instance_create(model, &instance);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(take(status), "cuMemAlloc of the 64-byte instance arena failed: "
                          "CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
  kiln_model_release(model);
  expectAllReleased();
}

TEST_F(CudaRunTest, DeviceName) {
  EXPECT_STREQ(kiln_model_device(model), "cuda:sm_90");
  EXPECT_STREQ(kiln_model_device(nullptr), "");
  EXPECT_EQ(kiln_model_arena_size(model), 64u);
}

TEST_F(CudaRunTest, StagesHostTensorsAndCachesDeviceState) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  runAndCheck(Case(3, 1.0f));
  int64_t allocsAfterFirst = delta().allocs;
  runAndCheck(Case(3, -2.0f));
  runAndCheck(Case(3, 0.5f));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.module_loads, 1);     // at kiln_instance_create
  EXPECT_EQ(d.function_lookups, 2); // each kernel once
  EXPECT_EQ(d.htod_sync, 1);        // the weight, once
  EXPECT_EQ(d.htod, 1 + 3);         // + the input, every run
  EXPECT_EQ(d.dtoh, 2 * 3);         // both outputs, every run
  EXPECT_EQ(d.dtod, 3);             // the model's kiln_rt_copy_device
  EXPECT_EQ(d.launches, 2 * 3);
  EXPECT_EQ(d.kernel_runs, 2 * 3);
  EXPECT_EQ(d.captures, 0);
  EXPECT_EQ(d.allocs, allocsAfterFirst); // buffers reused after run 1
  // arena, weight, scratch, input, 2 outputs
  EXPECT_EQ(allocsAfterFirst, 6);
  EXPECT_EQ(d.bad_pointers, 0);
}

TEST_F(CudaRunTest, WeightsUploadedOncePerInstance) {
  kiln_instance_t *second = nullptr;
  ASSERT_EQ(take(kiln_instance_create(model, &second)), "");
  runAndCheck(Case(3, 1.0f));
  std::swap(instance, second);
  runAndCheck(Case(3, 2.0f));
  runAndCheck(Case(3, 3.0f));
  std::swap(instance, second);
  kiln_instance_release(second);
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.module_loads, 2);
  EXPECT_EQ(d.htod_sync, 2);
}

TEST_F(CudaRunTest, InputValidation) {
  Case c(2, 1.0f);
  std::vector<kiln_tensor_view_t> in = c.views();
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  kiln_status_t *status = kiln_instance_run(instance, in.data(), 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(status), "input 0 ('x'): dimension 0 is 2, expected 3");
  EXPECT_EQ(delta().launch_attempts, 0);
}

TEST_F(CudaRunTest, GraphCaptureAndReplay) {
  runAndCheck(Case(3, 1.0f)); // plain: uploads, lookups, allocations
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.captures, 0);
  EXPECT_EQ(d.kernel_runs, 2);
  runAndCheck(Case(3, 2.0f)); // captured and launched
  d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.instantiations, 1);
  EXPECT_EQ(d.graph_launches, 1);
  EXPECT_EQ(d.launches, 4);
  EXPECT_EQ(d.kernel_runs, 4);
  int64_t allocs = d.allocs;
  runAndCheck(Case(3, -1.0f)); // replays, with new inputs
  runAndCheck(Case(3, 4.0f));
  d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.graph_launches, 3);
  EXPECT_EQ(d.launches, 4); // kiln_model_main no longer runs
  EXPECT_EQ(d.kernel_runs, 8);
  EXPECT_EQ(d.function_lookups, 2);
  EXPECT_EQ(d.htod_sync, 1);
  EXPECT_EQ(d.htod, 1 + 4);
  EXPECT_EQ(d.dtoh, 2 * 4);
  EXPECT_EQ(d.allocs, allocs);
  EXPECT_EQ(d.bad_pointers, 0);
}

TEST_F(CudaRunTest, GraphsOffInTheEnvironment) {
  env.set("KILN_CUDA_GRAPHS", "0");
  kiln_instance_t *other = nullptr;
  ASSERT_EQ(take(kiln_instance_create(model, &other)), "");
  std::swap(instance, other);
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  std::swap(instance, other);
  kiln_instance_release(other);
  EXPECT_EQ(delta().capture_attempts, 0);
}

/// A model whose kernels wait for the previous one themselves (the
/// signature's dependent-launch): launched with programmatic stream
/// serialization (cuLaunchKernelEx), directly and under capture, unless the
/// instance option or KILN_CUDA_DEPENDENT_LAUNCH=0 turns it off.
class CudaDependentLaunchTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_DEPENDENT_MODEL);
  }
  /// A second instance with `dependent_launch` (-1: unset) run three times
  /// (plain, captured, replayed); its status.
  std::string runOther(int32_t dependentLaunch) {
    kiln_instance_options_t options;
    kiln_instance_options_init(&options);
    options.dependent_launch = dependentLaunch;
    kiln_instance_t *other = nullptr;
    std::string status =
        take(kiln_instance_create_with_options(model, &options, &other));
    if (!status.empty())
      return status;
    std::swap(instance, other);
    for (int i = 0; i < 3; ++i)
      runAndCheck(Case(3, static_cast<float>(i)));
    std::swap(instance, other);
    kiln_instance_release(other);
    return "";
  }
};

TEST_F(CudaDependentLaunchTest, KernelsLaunchedDependent) {
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.graph_launches, 2);
  EXPECT_EQ(d.launches, 4); // the plain run's two kernels, the capture's
  EXPECT_EQ(d.dependent_launches, 4);
  EXPECT_EQ(d.kernel_runs, 6);
}

TEST_F(CudaDependentLaunchTest, OffByOption) {
  ASSERT_EQ(runOther(0), "");
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.launches, 4);
  EXPECT_EQ(d.dependent_launches, 0);
  EXPECT_EQ(d.kernel_runs, 6);
}

TEST_F(CudaDependentLaunchTest, OffInTheEnvironmentUnlessTheOptionSaysOn) {
  env.set("KILN_CUDA_DEPENDENT_LAUNCH", "0");
  ASSERT_EQ(runOther(-1), "");
  EXPECT_EQ(delta().dependent_launches, 0);
  ASSERT_EQ(runOther(1), "");
  EXPECT_EQ(delta().dependent_launches, 4);
}

TEST_F(CudaDependentLaunchTest, BadOption) {
  EXPECT_EQ(runOther(2), "the dependent_launch option is 2, expected 0 (off), "
                         "1 (on) or -1 (unset)");
}

TEST_F(CudaRunTest, ModelWithoutTheRecordLaunchesPlain) {
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.launches, 4);
  EXPECT_EQ(d.dependent_launches, 0);
}

TEST_F(CudaRunTest, CaptureFailureFallsBackToPlainRuns) {
  env.set("FAKE_CUDA_MODE", "nocapture");
  for (int i = 0; i < 4; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.capture_attempts, 1); // remembered
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.kernel_runs, 8);
}

TEST_F(CudaRunTest, InstantiationFailureFallsBackToPlainRuns) {
  env.set("FAKE_CUDA_MODE", "noinstantiate");
  for (int i = 0; i < 4; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.capture_attempts, 1);
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.instantiations, 0);
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.launches, 2 + 2 + 2 + 2 * 2); // run 2 captured, then redone
  EXPECT_EQ(d.kernel_runs, 8);
  // Turning graphs on again retries.
  env.set("FAKE_CUDA_MODE", nullptr);
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 1)), "");
  runAndCheck(Case(3, 5.0f));
  runAndCheck(Case(3, 6.0f));
  d = delta();
  EXPECT_EQ(d.instantiations, 1);
  EXPECT_EQ(d.graph_launches, 1);
}

TEST_F(CudaRunTest, TurningGraphsOffDropsTheGraph) {
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  EXPECT_EQ(driver->stats().live_graph_execs, 1);
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  EXPECT_EQ(driver->stats().live_graph_execs, 0);
  runAndCheck(Case(3, 7.0f));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.graph_launches, 2);
  EXPECT_EQ(d.launches, 2 + 2 + 2);
}

TEST_F(CudaRunTest, LaunchFailure) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  env.set("FAKE_CUDA_MODE", "launchfail");
  Case c(3, 1.0f);
  std::vector<kiln_tensor_view_t> in = c.views();
  kiln_tensor_t *out[2] = {reinterpret_cast<kiln_tensor_t *>(8), nullptr};
  kiln_status_t *status = kiln_instance_run(instance, in.data(), 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INTERNAL);
  EXPECT_EQ(take(status),
            "model run failed: cuLaunchKernel(kernel 0 'scale', grid 1x1x1, "
            "block 64x1x1) failed: CUDA_ERROR_LAUNCH_FAILED (unspecified "
            "launch failure)");
  EXPECT_EQ(out[0], nullptr);
  EXPECT_EQ(out[1], nullptr);
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.launch_attempts, 1); // the second launch did nothing
  EXPECT_EQ(d.dtod, 0);            // nor did the copy
  EXPECT_EQ(d.dtoh, 0);
  EXPECT_EQ(driver->depth(), 0);
  env.set("FAKE_CUDA_MODE", nullptr);
  runAndCheck(c);
}

TEST_F(CudaRunTest, FunctionLookupFailure) {
  env.set("FAKE_CUDA_MODE", "nofunction");
  Case c(3, 1.0f);
  std::vector<kiln_tensor_view_t> in = c.views();
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  EXPECT_EQ(take(kiln_instance_run(instance, in.data(), 1, out, 2)),
            "model run failed: cuModuleGetFunction(kernel 0 'scale') failed: "
            "CUDA_ERROR_NOT_FOUND (named symbol not found)");
  env.set("FAKE_CUDA_MODE", nullptr);
  runAndCheck(c);
}

TEST_F(CudaRunTest, OutOfDeviceMemoryDuringRun) {
  env.set("FAKE_CUDA_MODE", "oom");
  Case c(3, 1.0f);
  std::vector<kiln_tensor_view_t> in = c.views();
  kiln_tensor_t *out[2] = {nullptr, nullptr};
  kiln_status_t *status = kiln_instance_run(instance, in.data(), 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(take(status), "model run failed: cuMemAlloc of 256 bytes for "
                          "input 0 ('x') failed: CUDA_ERROR_OUT_OF_MEMORY "
                          "(out of memory)");
  env.set("FAKE_CUDA_MODE", nullptr);
  runAndCheck(c);
}

TEST_F(CudaRunTest, CallerStream) {
  void *stream = driver->streamCreate();
  ASSERT_EQ(take(kiln_instance_set_stream(instance, stream)), "");
  runAndCheck(Case(3, 1.0f));
  EXPECT_EQ(driver->stats().last_launch_stream, stream);
  ASSERT_EQ(take(kiln_instance_set_stream(instance, nullptr)), "");
  runAndCheck(Case(3, 2.0f)); // captured on the instance's own stream
  EXPECT_NE(driver->stats().last_launch_stream, stream);
  EXPECT_EQ(delta().captures, 1);
  driver->streamDestroy(stream);
}

TEST_F(CudaRunTest, ConcurrentInstances) {
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
      for (int iter = 0; iter < 50; ++iter) {
        Case c(3, static_cast<float>(t * 100 + iter));
        std::vector<kiln_tensor_view_t> in = c.views();
        kiln_tensor_t *out[2] = {nullptr, nullptr};
        if (kiln_status_t *status =
                kiln_instance_run(mine, in.data(), 1, out, 2)) {
          kiln_status_free(status);
          ++failures;
          continue;
        }
        const float *y = static_cast<const float *>(kiln_tensor_data(out[0]));
        for (size_t i = 0; i < c.y.size(); ++i)
          if (y[i] != c.y[i])
            ++failures;
        if (*static_cast<float *>(kiln_tensor_data(out[1])) != c.total)
          ++failures;
        kiln_tensor_release(out[0]);
        kiln_tensor_release(out[1]);
      }
      kiln_instance_release(mine);
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.captures, 4);
  EXPECT_EQ(d.graph_launches, 4 * 49);
  EXPECT_EQ(d.bad_pointers, 0);
}

//===----------------------------------------------------------------------===//
// The profile_path option: per-kernel times from events (the fake driver's
// clock: scale takes 1 ms, add_weight_sum 2 ms)
//===----------------------------------------------------------------------===//

class CudaProfileTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaRunTest::SetUp();
    mkdir(KILN_TEST_TMP_DIR, 0755);
    profile = std::string(KILN_TEST_TMP_DIR) + "/cuda_profile_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() +
              ".jsonl";
    std::remove(profile.c_str());
  }
  /// Releases the fixture's instance (which appends its report).
  void release() {
    kiln_instance_release(instance);
    instance = nullptr;
  }
  /// Replaces the fixture's instance by one created with the current
  /// environment and the profile_path option `path`.
  void recreate(const char *path) {
    release();
    kiln_instance_options_t options;
    kiln_instance_options_init(&options);
    options.profile_path = path;
    ASSERT_EQ(
        take(kiln_instance_create_with_options(model, &options, &instance)),
        "");
  }
  std::vector<std::string> lines() {
    std::ifstream in(profile);
    std::vector<std::string> result;
    for (std::string line; std::getline(in, line);)
      result.push_back(line);
    return result;
  }
  static std::string kernel(int index, const char *name, int launches, int ms) {
    std::ostringstream out;
    out << "{\"index\": " << index << ", \"name\": \"" << name
        << "\", \"launches\": " << launches
        << ", \"total_ms\": " << launches * ms << ".0000, \"mean_us\": " << ms
        << "000.000, \"min_us\": " << ms << "000.000, \"max_us\": " << ms
        << "000.000}";
    return out.str();
  }
  static std::string report(int runs, const std::string &stopped,
                            const std::string &kernels) {
    std::ostringstream out;
    out << "{\"model\": \"" << KILN_TEST_CUDA_MODEL << "\", \"runs\": " << runs
        << ", \"run_ms\": " << 3 * runs << ".0000, \"kernel_ms\": " << 3 * runs
        << ".0000, \"stopped\": " << stopped << ", \"kernels\": [" << kernels
        << "]}";
    return out.str();
  }
  std::string profile;
};

TEST_F(CudaProfileTest, WritesPerKernelTimesWithoutGraphs) {
  recreate(profile.c_str());
  // Graphs stay off while profiling, even when asked for.
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 1)), "");
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.capture_attempts, 0);
  EXPECT_EQ(d.graph_launches, 0);
  EXPECT_EQ(d.launches, 6);
  EXPECT_EQ(driver->stats().event_creates - before.event_creates, 4); // reused
  EXPECT_EQ(driver->stats().event_records - before.event_records, 12);
  EXPECT_TRUE(lines().empty());       // written at release
  kiln_instance_t *second = instance; // a second instance runs once
  instance = nullptr;
  recreate(profile.c_str());
  runAndCheck(Case(3, 4.0f));
  std::swap(instance, second);
  kiln_instance_release(second);
  release();
  std::vector<std::string> got = lines();
  ASSERT_EQ(got.size(), 2u);
  // Sorted by total time: add_weight_sum (2 ms a launch) first.
  EXPECT_EQ(got[0], report(1, "null",
                           kernel(1, "add_weight_sum", 1, 2) + ", " +
                               kernel(0, "scale", 1, 1)));
  EXPECT_EQ(got[1], report(3, "null",
                           kernel(1, "add_weight_sum", 3, 2) + ", " +
                               kernel(0, "scale", 3, 1)));
}

TEST_F(CudaProfileTest, EventFailuresStopProfilingNotTheRun) {
  recreate(profile.c_str());
  runAndCheck(Case(3, 1.0f));
  runAndCheck(Case(3, 2.0f));
  env.set("FAKE_CUDA_MODE", "eventfail");
  runAndCheck(Case(3, 3.0f));
  env.set("FAKE_CUDA_MODE", nullptr);
  runAndCheck(Case(3, 4.0f)); // profiling stays stopped
  EXPECT_EQ(driver->stats().event_records - before.event_records, 8);
  // An instance whose first event fails reports no run.
  env.set("FAKE_CUDA_MODE", "eventfail");
  kiln_instance_t *second = instance;
  instance = nullptr;
  recreate(profile.c_str());
  runAndCheck(Case(3, 5.0f));
  std::swap(instance, second);
  kiln_instance_release(second);
  env.set("FAKE_CUDA_MODE", nullptr);
  release();
  std::vector<std::string> got = lines();
  ASSERT_EQ(got.size(), 2u);
  const char *unsupported =
      " failed: CUDA_ERROR_NOT_SUPPORTED (operation not supported)\"";
  EXPECT_EQ(got[0],
            report(0, std::string("\"cuEventCreate") + unsupported, ""));
  EXPECT_EQ(got[1], report(2, std::string("\"cuEventRecord") + unsupported,
                           kernel(1, "add_weight_sum", 2, 2) + ", " +
                               kernel(0, "scale", 2, 1)));
}

TEST_F(CudaProfileTest, NothingWithoutTheOption) {
  // The fixture's instance was created without the option.
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  // The environment no longer sets it (KILN_CUDA_PROFILE was replaced by
  // kiln-run --profile), and "" is off.
  env.set("KILN_CUDA_PROFILE", profile.c_str());
  recreate("");
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, static_cast<float>(i)));
  release();
  EXPECT_EQ(delta().captures, 2); // graphs as usual
  EXPECT_EQ(driver->stats().event_creates - before.event_creates, 0);
  EXPECT_EQ(driver->stats().event_records - before.event_records, 0);
  struct stat info;
  EXPECT_NE(stat(profile.c_str(), &info), 0);
}

} // namespace
