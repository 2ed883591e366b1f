//===- OptionsTest.cpp - Options through the C API, the environment -------===//
//
// Model and instance options (kiln_model_options_t, kiln_instance_options_t)
// and the environment variables that fill what they leave unset (read in
// one place, lib/Runtime/Model/Options.c); the ABI version check of the
// loader; reading TensorProto files through the public API. Device options
// run on test/Runtime/fake_cuda_driver.c.
//
//===----------------------------------------------------------------------===//
#include "TestEnv.h"
#include "fake_cuda_driver.h"
#include "kiln-c/runtime.h"
#include "kiln/Runtime/ModelAPI.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

std::string take(kiln_status_t *status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

std::string withCode(kiln_status_t *status) {
  std::string code = kiln_status_code_name(kiln_status_code(status));
  return code + ": " + take(status);
}

/// Environment variables set for one test, restored after it.
using kiln_test::Env;

fake_cuda_stats fakeStats() {
  static fake_cuda_get_stats_fn stats = [] {
    void *library = dlopen(KILN_TEST_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    return library ? reinterpret_cast<fake_cuda_get_stats_fn>(
                         dlsym(library, "fake_cuda_get_stats"))
                   : nullptr;
  }();
  EXPECT_NE(stats, nullptr);
  return stats ? stats() : fake_cuda_stats{};
}

/// Every device variable unset, so only what a test sets applies.
class OptionsTest : public ::testing::Test {
protected:
  void SetUp() override {
    mkdir(KILN_TEST_TMP_DIR, 0755);
    for (const char *name :
         {"KILN_CUDA_DRIVER", "KILN_CUDA_DEVICE", "KILN_CUDA_GRAPHS",
          "KILN_CUDA_PROFILE", "KILN_WEIGHTS", "FAKE_CUDA_MODE"})
      env.set(name, nullptr);
    kiln_model_options_init(&modelOptions);
    kiln_instance_options_init(&instanceOptions);
  }

  /// Loads the fake cuda model with `modelOptions`; "" or the error.
  std::string load(const char *path = KILN_TEST_CUDA_MODEL) {
    kiln_model_release(model);
    model = nullptr;
    kiln_status_t *status =
        kiln_model_load_with_options(path, &modelOptions, &model);
    return status ? withCode(status) : "";
  }

  /// Runs the static fake cuda model (x: f32 [3, 4]) `runs` times on a new
  /// instance made with `instanceOptions`; returns the graph launches.
  int64_t graphLaunches(int runs) {
    kiln_instance_t *instance = nullptr;
    EXPECT_EQ(take(kiln_instance_create_with_options(model, &instanceOptions,
                                                     &instance)),
              "");
    if (!instance)
      return -1;
    int64_t before = fakeStats().graph_launches;
    std::vector<int64_t> dims = {3, 4};
    std::vector<float> x(12, 1.5f);
    kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, dims.data(), x.data()};
    for (int run = 0; run < runs; ++run) {
      kiln_tensor_t *out[2] = {nullptr, nullptr};
      EXPECT_EQ(take(kiln_instance_run(instance, &in, 1, out, 2)), "");
      if (out[0])
        EXPECT_EQ(static_cast<float *>(kiln_tensor_data(out[0]))[0],
                  2.0f * 1.5f + 0.5f);
      kiln_tensor_release(out[0]);
      kiln_tensor_release(out[1]);
    }
    kiln_instance_release(instance);
    return fakeStats().graph_launches - before;
  }

  void TearDown() override { kiln_model_release(model); }

  Env env;
  kiln_model_options_t modelOptions;
  kiln_instance_options_t instanceOptions;
  kiln_model_t *model = nullptr;
};

TEST_F(OptionsTest, InitLeavesEverythingUnset) {
  EXPECT_EQ(modelOptions.struct_size, sizeof(kiln_model_options_t));
  EXPECT_EQ(modelOptions.weights_path, nullptr);
  EXPECT_EQ(modelOptions.driver_path, nullptr);
  EXPECT_EQ(modelOptions.device_ordinal, -1);
  EXPECT_EQ(instanceOptions.struct_size, sizeof(kiln_instance_options_t));
  EXPECT_EQ(instanceOptions.graphs, -1);
  EXPECT_EQ(instanceOptions.profile_path, nullptr);
}

// The driver library through the API, no environment involved.
TEST_F(OptionsTest, DriverPathOption) {
  if (void *real = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL))
    dlclose(real);
  else
    EXPECT_EQ(load(), "FAILED_PRECONDITION: model compiled for cuda sm_90: "
                      "cannot load the CUDA driver (libcuda.so.1: cannot open "
                      "shared object file: No such file or directory)");
  modelOptions.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
  ASSERT_EQ(load(), "");
  EXPECT_STREQ(kiln_model_device(model), "cuda:sm_90");
  EXPECT_EQ(graphLaunches(3), 2); // runs 2 and 3 replay the graph
}

// KILN_CUDA_DRIVER fills an unset driver_path; a set one wins over it.
TEST_F(OptionsTest, DriverEnvironmentFillsOnlyUnset) {
  env.set("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER);
  ASSERT_EQ(load(), "");
  modelOptions.driver_path = "/nonexistent/libcuda.so.1";
  EXPECT_EQ(load(),
            "FAILED_PRECONDITION: model compiled for cuda sm_90: cannot load "
            "the CUDA driver (/nonexistent/libcuda.so.1: cannot open shared "
            "object file: No such file or directory)");
}

TEST_F(OptionsTest, GraphsOffByInstanceOption) {
  modelOptions.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
  ASSERT_EQ(load(), "");
  instanceOptions.graphs = 0;
  EXPECT_EQ(graphLaunches(4), 0);
  // The option wins over the environment both ways.
  env.set("KILN_CUDA_GRAPHS", "0");
  instanceOptions.graphs = 1;
  EXPECT_EQ(graphLaunches(4), 3);
  // Unset: the environment decides.
  instanceOptions.graphs = -1;
  EXPECT_EQ(graphLaunches(4), 0);
  env.set("KILN_CUDA_GRAPHS", nullptr);
  EXPECT_EQ(graphLaunches(4), 3);
  instanceOptions.graphs = 2;
  kiln_instance_t *instance = nullptr;
  EXPECT_EQ(withCode(kiln_instance_create_with_options(model, &instanceOptions,
                                                       &instance)),
            "INVALID_ARGUMENT: the graphs option is 2, expected 0 (off), 1 "
            "(on) or -1 (unset)");
  EXPECT_EQ(instance, nullptr);
}

TEST_F(OptionsTest, DeviceOrdinal) {
  modelOptions.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
  modelOptions.device_ordinal = 0;
  EXPECT_EQ(load(), "");
  modelOptions.device_ordinal = 3;
  env.set("KILN_CUDA_DEVICE", "0"); // the option wins
  EXPECT_EQ(load(), "FAILED_PRECONDITION: model compiled for cuda sm_90: the "
                    "device_ordinal option is '3', expected a device index "
                    "below 1");
  modelOptions.device_ordinal = -1;
  env.set("KILN_CUDA_DEVICE", "1");
  EXPECT_EQ(load(), "FAILED_PRECONDITION: model compiled for cuda sm_90: "
                    "KILN_CUDA_DEVICE is '1', expected a device index below 1");
  env.set("KILN_CUDA_DEVICE", "first");
  EXPECT_EQ(load(), "FAILED_PRECONDITION: KILN_CUDA_DEVICE is 'first', "
                    "expected a device index (0, 1, ...)");
  modelOptions.device_ordinal = -7;
  EXPECT_EQ(load(), "INVALID_ARGUMENT: the device_ordinal option is -7, "
                    "expected a device index or -1 (unset)");
}

TEST_F(OptionsTest, ProfilePathOption) {
  modelOptions.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
  ASSERT_EQ(load(), "");
  std::string path = std::string(KILN_TEST_TMP_DIR) + "/options-profile.jsonl";
  std::string envPath = path + ".env";
  std::remove(path.c_str());
  std::remove(envPath.c_str());
  env.set("KILN_CUDA_PROFILE", envPath.c_str());
  instanceOptions.profile_path = path.c_str();
  int64_t events = fakeStats().event_records;
  EXPECT_EQ(graphLaunches(3), 0); // no graphs while profiling
  EXPECT_GT(fakeStats().event_records, events);
  std::ifstream in(path);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << path;
  EXPECT_NE(line.find("\"runs\": 3"), std::string::npos) << line;
  EXPECT_NE(access(envPath.c_str(), F_OK), 0)
      << "KILN_CUDA_PROFILE is no longer read";
  // "" and unset turn profiling off; the environment does not set it.
  instanceOptions.profile_path = "";
  EXPECT_EQ(graphLaunches(3), 2);
  instanceOptions.profile_path = nullptr;
  EXPECT_EQ(graphLaunches(3), 2);
  EXPECT_NE(access(envPath.c_str(), F_OK), 0);
  std::remove(path.c_str());
  std::remove(envPath.c_str());
}

// A caller built against an older header passes a smaller struct: the
// fields it does not know stay unset.
TEST_F(OptionsTest, StructSize) {
  kiln_model_options_t older;
  kiln_model_options_init(&older);
  older.struct_size = offsetof(kiln_model_options_t, driver_path);
  older.driver_path = "/nonexistent/ignored.so"; // past struct_size
  env.set("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER);
  ASSERT_EQ(
      take(kiln_model_load_with_options(KILN_TEST_CUDA_MODEL, &older, &model)),
      "");
  kiln_model_release(model);
  model = nullptr;
  older.struct_size = 0;
  EXPECT_EQ(
      withCode(
          kiln_model_load_with_options(KILN_TEST_CUDA_MODEL, &older, &model)),
      "INVALID_ARGUMENT: kiln_model_options: struct_size is 0, expected " +
          std::to_string(sizeof(kiln_model_options_t)) +
          " (initialize the struct with kiln_model_options_init)");
  EXPECT_EQ(model, nullptr);
  ASSERT_EQ(load(KILN_TEST_FAKE_MODEL), "");
  kiln_instance_options_t bad;
  kiln_instance_options_init(&bad);
  bad.struct_size = sizeof(bad) + 8;
  kiln_instance_t *instance = nullptr;
  EXPECT_EQ(withCode(kiln_instance_create_with_options(model, &bad, &instance)),
            "INVALID_ARGUMENT: kiln_instance_options: struct_size is " +
                std::to_string(sizeof(bad) + 8) + ", expected " +
                std::to_string(sizeof(bad)) +
                " (initialize the struct with kiln_instance_options_init)");
  // cpu models take (and ignore) device instance options.
  instanceOptions.graphs = 0;
  instanceOptions.profile_path = "/nonexistent/dir/profile.jsonl";
  ASSERT_EQ(take(kiln_instance_create_with_options(model, &instanceOptions,
                                                   &instance)),
            "");
  kiln_instance_release(instance);
}

TEST_F(OptionsTest, ImageOfAnotherKind) {
  modelOptions.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
  EXPECT_EQ(load(KILN_TEST_CUDA_HIP_IMAGE_MODEL),
            "INCOMPATIBLE: model compiled for cuda sm_90: its device image is "
            "of kind 'hip' (kiln_model_device_image_kind), the cuda driver "
            "loads 'cuda' images");
}

//===----------------------------------------------------------------------===//
// ABI versions
//===----------------------------------------------------------------------===//

// A model.so built before ABI version 4 exports kiln_model_api_v1: the
// loader reads only the version of its table and names both versions.
TEST(AbiVersionTest, ModelFromBeforeVersion4) {
  kiln_model_t *model = nullptr;
  EXPECT_EQ(withCode(kiln_model_load(KILN_TEST_BAD_ABI_MODEL, &model)),
            std::string("INCOMPATIBLE: model '") + KILN_TEST_BAD_ABI_MODEL +
                "' was built for Kiln runtime ABI version 3 "
                "(kiln_model_api_v1), this runtime supports version 7 "
                "(kiln_model_api_v2); recompile it with a matching kilnc");
  EXPECT_EQ(model, nullptr);
}

TEST(AbiVersionTest, ModelFromALaterRuntime) {
  kiln_model_t *model = nullptr;
  EXPECT_EQ(withCode(kiln_model_load(KILN_TEST_FUTURE_ABI_MODEL, &model)),
            std::string("INCOMPATIBLE: model '") + KILN_TEST_FUTURE_ABI_MODEL +
                "' was built for Kiln runtime ABI version 999 "
                "(kiln_model_api_v2), this runtime supports version 7 "
                "(kiln_model_api_v2); recompile it with a matching kilnc");
  EXPECT_EQ(model, nullptr);
}

// What a loader of ABI versions 1 to 3 sees in a model of today: its
// kiln_model_api_v1 returns a table whose version (checked first) is 7.
TEST(AbiVersionTest, OlderLoadersSeeTodaysVersion) {
  void *library = dlopen(KILN_TEST_FAKE_MODEL, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(library, nullptr) << dlerror();
  auto v1 = reinterpret_cast<kiln_model_api_header_fn>(
      dlsym(library, KILN_MODEL_API_V1_SYMBOL));
  ASSERT_NE(v1, nullptr);
  EXPECT_EQ(v1()->abi_version, 7u);
  EXPECT_EQ(v1()->struct_size, sizeof(kiln_model_api_header));
  auto v2 = reinterpret_cast<kiln_model_api_v2_fn>(
      dlsym(library, KILN_MODEL_API_SYMBOL));
  ASSERT_NE(v2, nullptr);
  EXPECT_EQ(v2()->abi_version, 7u);
  EXPECT_GT(v2()->struct_size, sizeof(kiln_model_api_header));
  dlclose(library);
}

//===----------------------------------------------------------------------===//
// TensorProto files through the API
//===----------------------------------------------------------------------===//

TEST(TensorFileTest, WriteThenRead) {
  int64_t dims[2] = {2, 3};
  kiln_tensor_t *tensor = nullptr;
  ASSERT_EQ(take(kiln_tensor_allocate(KILN_DTYPE_F32, 2, dims, &tensor)), "");
  EXPECT_STREQ(kiln_tensor_name(tensor), "");
  float *data = static_cast<float *>(kiln_tensor_data(tensor));
  for (int i = 0; i < 6; ++i)
    data[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::string path = std::string(KILN_TEST_TMP_DIR) + "/api_tensor.pb";
  ASSERT_EQ(take(kiln_tensor_write_file(tensor, "x:0", path.c_str())), "");
  kiln_tensor_t *back = nullptr;
  ASSERT_EQ(take(kiln_tensor_read_file(path.c_str(), &back)), "");
  EXPECT_STREQ(kiln_tensor_name(back), "x:0");
  EXPECT_EQ(kiln_tensor_dtype(back), KILN_DTYPE_F32);
  ASSERT_EQ(kiln_tensor_rank(back), 2u);
  EXPECT_EQ(kiln_tensor_dims(back)[0], 2);
  EXPECT_EQ(kiln_tensor_dims(back)[1], 3);
  ASSERT_EQ(kiln_tensor_byte_size(back), 24u);
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(static_cast<float *>(kiln_tensor_data(back))[i], data[i]);
  kiln_tensor_release(back);
  kiln_tensor_release(tensor);

  EXPECT_EQ(withCode(kiln_tensor_read_file("/nonexistent/x.pb", &back)),
            "NOT_FOUND: cannot open '/nonexistent/x.pb': No such file or "
            "directory");
  EXPECT_EQ(back, nullptr);
  std::ofstream(path, std::ios::binary) << "\xff\xff\xff";
  std::string error = withCode(kiln_tensor_read_file(path.c_str(), &back));
  EXPECT_EQ(error.rfind("INVALID_ARGUMENT: '" + path +
                            "' is not a valid TensorProto: ",
                        0),
            0u)
      << error;
  std::remove(path.c_str());
}

} // namespace
