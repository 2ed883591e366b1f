//===- ExternalWeightsTest.cpp - Models with a separate weights file ------===//
//
// fake_weights_model.c stands in for a model compiled with kilnc
// --external-weights: y = 2x + w + b, total = sum(y), with w and b read
// from a memory-mapped weights file. The tests write weights files (header
// and data as kilnc and utils/models/fill_weights.py write them), load the
// model with and without an explicit path, swap files without reloading a
// different model.so, and check every failure is a clear status. The cuda
// variant runs on test/Runtime/fake_cuda_driver.c.
//
//===----------------------------------------------------------------------===//
#include "fake_cuda_driver.h"
#include "kiln-c/runtime.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace {

constexpr uint64_t kHash = 0x00c0ffee12345678ULL;

std::string take(kiln_status_t *status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

std::string dirOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Bytes of a weights file: header, w at 64, b at 128 (file size 144).
std::string weightsFile(const float w[4], const float b[4],
                        uint64_t hash = kHash) {
  std::string bytes(144, '\0');
  memcpy(&bytes[0], "KILNWTS1", 8);
  for (int i = 0; i < 8; ++i) {
    bytes[8 + i] = static_cast<char>((hash >> (8 * i)) & 0xff);
    bytes[16 + i] = static_cast<char>((uint64_t(144) >> (8 * i)) & 0xff);
    bytes[24 + i] = static_cast<char>((uint64_t(2) >> (8 * i)) & 0xff);
  }
  memcpy(&bytes[64], w, 16);
  memcpy(&bytes[128], b, 16);
  return bytes;
}

void writeFile(const std::string &path, const std::string &bytes) {
  FILE *f = fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  fclose(f);
}

std::string tmpPath(const std::string &name) {
  mkdir(KILN_TEST_TMP_DIR, 0755);
  return std::string(KILN_TEST_TMP_DIR) + "/" + name;
}

const float kW1[4] = {1, 2, 3, 4}, kB1[4] = {0.5f, 0.25f, -1, 8};
const float kW2[4] = {-10, 0, 10, 100}, kB2[4] = {0, 0, 0, 1};

/// Runs the model on x = [0, 1, ..., 11] and checks y = 2x + w + b.
void runAndCheck(kiln_model_t *model, const float w[4], const float b[4]) {
  kiln_instance_t *instance = nullptr;
  ASSERT_EQ(kiln_instance_create(model, &instance), nullptr);
  std::vector<float> x(12);
  for (int i = 0; i < 12; ++i)
    x[i] = static_cast<float>(i);
  int64_t dims[2] = {3, 4};
  kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, dims, x.data()};
  for (int run = 0; run < 3; ++run) { // cuda: plain, captured, replayed
    kiln_tensor_t *out[2] = {nullptr, nullptr};
    kiln_status_t *status = kiln_instance_run(instance, &in, 1, out, 2);
    ASSERT_EQ(status, nullptr) << take(status);
    const float *y = static_cast<const float *>(kiln_tensor_data(out[0]));
    float sum = 0;
    for (int i = 0; i < 12; ++i) {
      float want = 2.0f * x[i] + w[i % 4] + b[i % 4];
      EXPECT_EQ(y[i], want) << "y[" << i << "] run " << run;
      sum += want;
    }
    EXPECT_EQ(*static_cast<const float *>(kiln_tensor_data(out[1])), sum);
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
  }
  kiln_instance_release(instance);
}

/// Loads `so` with `weights` (NULL: default lookup) expecting failure;
/// returns "<CODE>: <message>".
std::string loadError(const char *so, const char *weights) {
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(8);
  kiln_status_t *status = kiln_model_load_with_weights(so, weights, &model);
  EXPECT_EQ(model, nullptr);
  std::string code = kiln_status_code_name(kiln_status_code(status));
  return code + ": " + take(status);
}

class ExternalWeightsTest : public ::testing::Test {
protected:
  void SetUp() override {
    unsetenv("KILN_WEIGHTS");
    defaultPath = dirOf(KILN_TEST_WEIGHTS_MODEL) + "/fake_weights.weights";
    writeFile(defaultPath, weightsFile(kW1, kB1));
  }
  void TearDown() override {
    unlink(defaultPath.c_str());
    unsetenv("KILN_WEIGHTS");
  }
  std::string defaultPath;
};

TEST_F(ExternalWeightsTest, LoadsTheFileNextToTheModel) {
  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load(KILN_TEST_WEIGHTS_MODEL, &model);
  ASSERT_EQ(status, nullptr) << take(status);
  EXPECT_EQ(std::string(kiln_model_weights_path(model)), defaultPath);
  // Weights are not inputs.
  EXPECT_EQ(kiln_model_num_inputs(model), 1u);
  runAndCheck(model, kW1, kB1);
  kiln_model_release(model);
}

TEST_F(ExternalWeightsTest, SwapsWeightsWithoutRecompiling) {
  std::string other = tmpPath("other.weights");
  writeFile(other, weightsFile(kW2, kB2));
  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load_with_weights(KILN_TEST_WEIGHTS_MODEL,
                                                       other.c_str(), &model);
  ASSERT_EQ(status, nullptr) << take(status);
  EXPECT_EQ(std::string(kiln_model_weights_path(model)), other);
  // The mapping outlives the file's name.
  unlink(other.c_str());
  runAndCheck(model, kW2, kB2);
  kiln_model_release(model);

  // KILN_WEIGHTS when no path is given.
  writeFile(other, weightsFile(kW2, kB1));
  setenv("KILN_WEIGHTS", other.c_str(), 1);
  ASSERT_EQ(kiln_model_load(KILN_TEST_WEIGHTS_MODEL, &model), nullptr);
  runAndCheck(model, kW2, kB1);
  kiln_model_release(model);
  // An explicit path wins over KILN_WEIGHTS.
  ASSERT_EQ(kiln_model_load_with_weights(KILN_TEST_WEIGHTS_MODEL,
                                         defaultPath.c_str(), &model),
            nullptr);
  runAndCheck(model, kW1, kB1);
  kiln_model_release(model);
  unlink(other.c_str());
}

TEST_F(ExternalWeightsTest, MissingFile) {
  unlink(defaultPath.c_str());
  std::string error = loadError(KILN_TEST_WEIGHTS_MODEL, nullptr);
  EXPECT_NE(error.find("NOT_FOUND: cannot open the weights file '" +
                       defaultPath + "' of model '" + KILN_TEST_WEIGHTS_MODEL +
                       "': No such file or directory"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("KILN_WEIGHTS"), std::string::npos) << error;
  setenv("KILN_WEIGHTS", "/nonexistent/x.weights", 1);
  error = loadError(KILN_TEST_WEIGHTS_MODEL, nullptr);
  EXPECT_NE(error.find("NOT_FOUND: cannot open the weights file "
                       "'/nonexistent/x.weights'"),
            std::string::npos)
      << error;
  error = loadError(KILN_TEST_WEIGHTS_MODEL, KILN_TEST_TMP_DIR);
  EXPECT_NE(error.find("INVALID_ARGUMENT: weights file '" +
                       std::string(KILN_TEST_TMP_DIR) +
                       "' is not a regular file"),
            std::string::npos)
      << error;
}

TEST_F(ExternalWeightsTest, TruncatedFile) {
  std::string path = tmpPath("truncated.weights");
  writeFile(path, weightsFile(kW1, kB1).substr(0, 140));
  std::string error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("INVALID_ARGUMENT: weights file '" + path +
                       "' is truncated: it has 140 bytes, weight 1 ('b bias', "
                       "f32 [4]) needs bytes [128, 144)"),
            std::string::npos)
      << error;
  writeFile(path, weightsFile(kW1, kB1).substr(0, 40));
  error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("is truncated: it has 40 bytes, less than its 64-byte "
                       "header (model '" +
                       std::string(KILN_TEST_WEIGHTS_MODEL) +
                       "' needs 144 bytes)"),
            std::string::npos)
      << error;
  writeFile(path, "");
  error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("is truncated: it has 0 bytes"), std::string::npos)
      << error;
  unlink(path.c_str());
}

TEST_F(ExternalWeightsTest, WrongFile) {
  std::string path = tmpPath("wrong.weights");
  writeFile(path, std::string(200, 'x'));
  std::string error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("INVALID_ARGUMENT: '" + path +
                       "' is not a Kiln weights file (it does not start with "
                       "the magic 'KILNWTS1'"),
            std::string::npos)
      << error;
  writeFile(path, "x");
  error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("is not a Kiln weights file"), std::string::npos)
      << error;
  // Another layout (a weights file of another model).
  writeFile(path, weightsFile(kW1, kB1, 0x1122334455667788ULL));
  error = loadError(KILN_TEST_WEIGHTS_MODEL, path.c_str());
  EXPECT_NE(error.find("INVALID_ARGUMENT: weights file '" + path +
                       "' has weight layout 1122334455667788, model '" +
                       KILN_TEST_WEIGHTS_MODEL +
                       "' expects 00c0ffee12345678: it was written for "
                       "another model"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("fake_weights.weights.json"), std::string::npos)
      << error;
  unlink(path.c_str());
}

TEST_F(ExternalWeightsTest, ModelWithoutExternalWeights) {
  // A weights file given for a model compiled without them is a mistake;
  // KILN_WEIGHTS (process-wide) is ignored by such models.
  std::string error = loadError(KILN_TEST_FAKE_MODEL, defaultPath.c_str());
  EXPECT_NE(error.find("INVALID_ARGUMENT: model '" +
                       std::string(KILN_TEST_FAKE_MODEL) +
                       "' has no external weights (it was compiled without "
                       "--external-weights), but the weights file '" +
                       defaultPath + "' was given"),
            std::string::npos)
      << error;
  setenv("KILN_WEIGHTS", "/nonexistent/x.weights", 1);
  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load(KILN_TEST_FAKE_MODEL, &model);
  EXPECT_EQ(status, nullptr) << take(status);
  EXPECT_STREQ(kiln_model_weights_path(model), "");
  kiln_model_release(model);
}

TEST_F(ExternalWeightsTest, MalformedWeightRecord) {
  std::string error = loadError(KILN_TEST_WEIGHTS_BAD_RECORD_MODEL, nullptr);
  EXPECT_NE(error.find("INCOMPATIBLE: malformed model signature, line 8: "
                       "weight size differs from its dims"),
            std::string::npos)
      << error;
}

/// The fake CUDA driver's counters.
struct FakeDriver {
  void *library = nullptr;
  fake_cuda_get_stats_fn stats = nullptr;
  fake_cuda_reset_stats_fn reset = nullptr;
  FakeDriver() {
    library = dlopen(KILN_TEST_FAKE_CUDA_DRIVER, RTLD_NOW | RTLD_LOCAL);
    if (library) {
      stats = reinterpret_cast<fake_cuda_get_stats_fn>(
          dlsym(library, "fake_cuda_get_stats"));
      reset = reinterpret_cast<fake_cuda_reset_stats_fn>(
          dlsym(library, "fake_cuda_reset_stats"));
    }
  }
  ~FakeDriver() {
    if (library)
      dlclose(library);
  }
};

TEST_F(ExternalWeightsTest, CudaUploadsEachWeightOncePerInstance) {
  setenv("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER, 1);
  unsetenv("KILN_CUDA_GRAPHS");
  unsetenv("FAKE_CUDA_MODE");
  FakeDriver driver;
  ASSERT_TRUE(driver.stats && driver.reset);
  std::string cudaDefault =
      dirOf(KILN_TEST_WEIGHTS_CUDA_MODEL) + "/fake_weights.weights";
  ASSERT_EQ(cudaDefault, defaultPath); // same folder: one file serves both

  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load(KILN_TEST_WEIGHTS_CUDA_MODEL, &model);
  ASSERT_EQ(status, nullptr) << take(status);
  EXPECT_STREQ(kiln_model_device(model), "cuda:sm_90");
  driver.reset();
  runAndCheck(model, kW1, kB1); // 3 runs: plain, captured, replayed
  fake_cuda_stats s = driver.stats();
  EXPECT_EQ(s.htod_sync, 2);                // w and b, once
  EXPECT_EQ(s.htod_bytes, 2 * 16 + 3 * 48); // + x per run
  EXPECT_EQ(s.captures, 1);
  EXPECT_EQ(s.graph_launches, 2);
  EXPECT_EQ(s.bad_pointers, 0);
  EXPECT_EQ(s.live_allocs, 0);
  kiln_model_release(model);

  std::string other = tmpPath("cuda_other.weights");
  writeFile(other, weightsFile(kW2, kB2));
  ASSERT_EQ(kiln_model_load_with_weights(KILN_TEST_WEIGHTS_CUDA_MODEL,
                                         other.c_str(), &model),
            nullptr);
  runAndCheck(model, kW2, kB2);
  kiln_model_release(model);
  unlink(other.c_str());
  unsetenv("KILN_CUDA_DRIVER");
}

} // namespace
