//===- RuntimeTest.cpp - Tests of the runtime C API -----------------------===//
#include "kiln-c/runtime.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

/// Takes a status, returns its message (or "" when OK) and frees it.
std::string take(kiln_status_t *status) {
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

struct Inputs {
  std::vector<int64_t> xDims, biasDims;
  std::vector<float> x, bias;
  std::vector<kiln_tensor_view_t> views;

  explicit Inputs(int64_t n) : xDims{n, 4}, biasDims{n} {
    for (int64_t i = 0; i < n * 4; ++i)
      x.push_back(static_cast<float>(i) * 0.5f);
    for (int64_t i = 0; i < n; ++i)
      bias.push_back(static_cast<float>(100 * i));
    views.push_back({KILN_DTYPE_F32, 2, xDims.data(), x.data()});
    views.push_back({KILN_DTYPE_F32, 1, biasDims.data(), bias.data()});
  }
  float expected(int64_t i, int64_t j) const {
    return 2 * x[i * 4 + j] + bias[i];
  }
};

class RuntimeTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    if (!*GetParam())
      GTEST_SKIP() << "model not built (no ld.lld)";
    ASSERT_EQ(take(kiln_model_load(GetParam(), &model)), "");
    ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  }
  void TearDown() override {
    kiln_instance_release(instance);
    kiln_model_release(model);
  }

  /// Runs and returns the status message ("" when OK).
  std::string run(const std::vector<kiln_tensor_view_t> &views,
                  size_t numOutputs = 2) {
    outputs.assign(numOutputs, nullptr);
    return take(kiln_instance_run(instance, views.data(), views.size(),
                                  outputs.data(), outputs.size()));
  }
  void releaseOutputs() {
    for (kiln_tensor_t *t : outputs)
      kiln_tensor_release(t);
    outputs.clear();
  }

  kiln_model_t *model = nullptr;
  kiln_instance_t *instance = nullptr;
  std::vector<kiln_tensor_t *> outputs;
};

void checkOutputs(const Inputs &in, kiln_tensor_t *y, kiln_tensor_t *rows) {
  int64_t n = in.xDims[0];
  ASSERT_NE(y, nullptr);
  ASSERT_EQ(kiln_tensor_dtype(y), KILN_DTYPE_F32);
  ASSERT_EQ(kiln_tensor_rank(y), 2u);
  EXPECT_EQ(kiln_tensor_dims(y)[0], n);
  EXPECT_EQ(kiln_tensor_dims(y)[1], 4);
  EXPECT_EQ(kiln_tensor_num_elements(y), static_cast<size_t>(n * 4));
  EXPECT_EQ(kiln_tensor_byte_size(y), static_cast<size_t>(n * 16));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(kiln_tensor_data(y)) % 64, 0u);
  const float *data = static_cast<const float *>(kiln_tensor_data(y));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < 4; ++j)
      ASSERT_EQ(data[i * 4 + j], in.expected(i, j)) << i << "," << j;
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(kiln_tensor_dtype(rows), KILN_DTYPE_I64);
  EXPECT_EQ(kiln_tensor_rank(rows), 0u);
  EXPECT_EQ(*static_cast<const int64_t *>(kiln_tensor_data(rows)), n);
}

TEST(RuntimeLoadTest, MissingFile) {
  kiln_model_t *model = reinterpret_cast<kiln_model_t *>(1);
  kiln_status_t *status = kiln_model_load("/nonexistent/model.so", &model);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_NOT_FOUND);
  EXPECT_EQ(model, nullptr);
  EXPECT_EQ(take(status), "cannot open model '/nonexistent/model.so': No "
                          "such file or directory");
}

TEST(RuntimeLoadTest, NotASharedLibrary) {
  kiln_model_t *model = nullptr;
  // A file that exists but is no shared library: this test's source (by an
  // absolute path: __FILE__ is relative under ccache's base_dir).
  kiln_status_t *status = kiln_model_load(KILN_TEST_SOURCE_FILE, &model);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INCOMPATIBLE);
  EXPECT_NE(take(status).find("cannot load model"), std::string::npos);
  EXPECT_EQ(model, nullptr);
}

TEST(RuntimeLoadTest, NotAKilnModel) {
  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load("libm.so.6", &model);
  // "libm.so.6" has no '/': it is looked up in the current directory.
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_NOT_FOUND);
  kiln_status_free(status);
  const char *libm = nullptr;
  for (const char *path :
       {"/lib/x86_64-linux-gnu/libm.so.6",
        "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6",
        "/usr/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"})
    if (access(path, R_OK) == 0) {
      libm = path;
      break;
    }
  if (!libm)
    GTEST_SKIP() << "no libm.so.6 found";
  status = kiln_model_load(libm, &model);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INCOMPATIBLE);
  EXPECT_EQ(take(status), std::string("'") + libm +
                              "' is not a Kiln model (it does not export "
                              "kiln_model_api_v2)");
  EXPECT_EQ(model, nullptr);
}

TEST(RuntimeLoadTest, AbiVersionMismatch) {
  kiln_model_t *model = nullptr;
  kiln_status_t *status = kiln_model_load(KILN_TEST_BAD_ABI_MODEL, &model);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INCOMPATIBLE);
  EXPECT_NE(take(status).find("was built for Kiln runtime ABI version 3 "
                              "(kiln_model_api_v1), this runtime supports "
                              "version 7 (kiln_model_api_v2)"),
            std::string::npos);
  EXPECT_EQ(model, nullptr);
}

TEST(RuntimeLoadTest, SignatureVersionMismatch) {
  kiln_model_t *model = nullptr;
  kiln_status_t *status =
      kiln_model_load(KILN_TEST_BAD_SIGNATURE_MODEL, &model);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INCOMPATIBLE);
  EXPECT_EQ(take(status),
            "model signature version 2 is not supported (expected 1)");
  EXPECT_EQ(model, nullptr);
}

TEST(RuntimeStatusTest, Helpers) {
  EXPECT_EQ(kiln_status_code(nullptr), KILN_STATUS_OK);
  EXPECT_STREQ(kiln_status_message(nullptr), "");
  kiln_status_free(nullptr);
  EXPECT_STREQ(kiln_status_code_name(KILN_STATUS_INVALID_ARGUMENT),
               "INVALID_ARGUMENT");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BF16), "bf16");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_BOOL), "bool");
  EXPECT_STREQ(kiln_dtype_name(static_cast<kiln_dtype_t>(99)), "invalid");
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F64), 8u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BOOL), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_INVALID), 0u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F8E4M3FN), "f8e4m3fn");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F8E4M3FNUZ), "f8e4m3fnuz");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F8E5M2), "f8e5m2");
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_F8E5M2FNUZ), "f8e5m2fnuz");
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F8E5M2FNUZ), 1u);

  kiln_tensor_t *tensor = nullptr;
  int64_t dims[] = {2, 3};
  ASSERT_EQ(take(kiln_tensor_allocate(KILN_DTYPE_I16, 2, dims, &tensor)), "");
  EXPECT_EQ(kiln_tensor_byte_size(tensor), 12u);
  kiln_tensor_view_t view = kiln_tensor_as_view(tensor);
  EXPECT_EQ(view.rank, 2u);
  EXPECT_EQ(view.data, kiln_tensor_data(tensor));
  kiln_tensor_release(tensor);
  int64_t bad[] = {2, -3};
  kiln_status_t *status = kiln_tensor_allocate(KILN_DTYPE_I16, 2, bad, &tensor);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(tensor, nullptr);
  kiln_status_free(status);
}

TEST_P(RuntimeTest, Signature) {
  ASSERT_EQ(kiln_model_num_inputs(model), 2u);
  ASSERT_EQ(kiln_model_num_outputs(model), 2u);
  EXPECT_EQ(kiln_model_arena_size(model), 128u);
  kiln_value_info_t info;
  ASSERT_EQ(take(kiln_model_input_info(model, 0, &info)), "");
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.dims[0], -1);
  EXPECT_EQ(info.dims[1], 4);
  EXPECT_STREQ(info.dim_symbols[0], "N");
  EXPECT_STREQ(info.dim_symbols[1], "");
  ASSERT_EQ(take(kiln_model_input_info(model, 1, &info)), "");
  EXPECT_STREQ(info.name, "bias");
  ASSERT_EQ(info.rank, 1u);
  EXPECT_STREQ(info.dim_symbols[0], "N");
  ASSERT_EQ(take(kiln_model_output_info(model, 1, &info)), "");
  EXPECT_STREQ(info.name, "n rows"); // %20 decoded
  EXPECT_EQ(info.dtype, KILN_DTYPE_I64);
  EXPECT_EQ(info.rank, 0u);
  EXPECT_EQ(take(kiln_model_output_info(model, 2, &info)),
            "output index 2 out of range (2 outputs)");
  EXPECT_EQ(take(kiln_model_input_info(model, 5, &info)),
            "input index 5 out of range (2 inputs)");
}

TEST_P(RuntimeTest, RunsAtSeveralBatchSizes) {
  for (int64_t n : {3, 1, 64, 0, 3}) {
    Inputs in(n);
    ASSERT_EQ(run(in.views), "") << "N=" << n;
    checkOutputs(in, outputs[0], outputs[1]);
    releaseOutputs();
  }
}

TEST_P(RuntimeTest, UnalignedInputIsCopied) {
  Inputs in(5);
  std::vector<char> bytes(in.x.size() * sizeof(float) + 1);
  std::memcpy(bytes.data() + 1, in.x.data(), in.x.size() * sizeof(float));
  in.views[0].data = bytes.data() + 1;
  ASSERT_EQ(run(in.views), "");
  checkOutputs(in, outputs[0], outputs[1]);
  releaseOutputs();
}

TEST_P(RuntimeTest, OutputsOutliveInstanceAndModel) {
  Inputs in(2);
  ASSERT_EQ(run(in.views), "");
  kiln_instance_release(instance);
  kiln_model_release(model);
  instance = nullptr;
  model = nullptr;
  checkOutputs(in, outputs[0], outputs[1]);
  releaseOutputs();
}

TEST_P(RuntimeTest, WrongInputCount) {
  Inputs in(2);
  in.views.pop_back();
  EXPECT_EQ(run(in.views), "expected 2 inputs, got 1");
  Inputs in2(2);
  EXPECT_EQ(run(in2.views, 1), "expected 2 outputs, got 1");
}

TEST_P(RuntimeTest, WrongDtype) {
  Inputs in(2);
  in.views[1].dtype = KILN_DTYPE_I32;
  kiln_tensor_t *sentinel = reinterpret_cast<kiln_tensor_t *>(8);
  outputs.assign(2, sentinel);
  kiln_status_t *status =
      kiln_instance_run(instance, in.views.data(), 2, outputs.data(), 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(status), "input 1 ('bias'): dtype is i32, expected f32");
  EXPECT_EQ(outputs[0], nullptr);
  EXPECT_EQ(outputs[1], nullptr);
}

TEST_P(RuntimeTest, WrongRank) {
  Inputs in(2);
  in.views[0].rank = 3;
  int64_t dims[] = {2, 4, 1};
  in.views[0].dims = dims;
  EXPECT_EQ(run(in.views), "input 0 ('x'): rank is 3, expected 2");
}

TEST_P(RuntimeTest, WrongStaticDim) {
  Inputs in(2);
  in.xDims[1] = 3;
  EXPECT_EQ(run(in.views), "input 0 ('x'): dimension 1 is 3, expected 4");
}

TEST_P(RuntimeTest, NegativeDim) {
  Inputs in(2);
  in.xDims[0] = -2;
  EXPECT_EQ(run(in.views), "input 0 ('x'): dimension 0 is -2, expected a "
                           "non-negative size");
}

TEST_P(RuntimeTest, SymbolMismatch) {
  Inputs in(3);
  in.biasDims[0] = 5;
  EXPECT_EQ(run(in.views),
            "input 1 ('bias'): dimension 0 is 5, expected 3 (symbol 'N' is 3 "
            "in input 0 ('x') dimension 0)");
}

TEST_P(RuntimeTest, NullData) {
  Inputs in(3);
  in.views[0].data = nullptr;
  EXPECT_EQ(run(in.views), "input 0 ('x'): data is NULL");
}

TEST_P(RuntimeTest, AllocationFailureReleasesOutputs) {
  Inputs in(13);
  kiln_status_t *status =
      kiln_instance_run(instance, in.views.data(), 2,
                        (outputs.assign(2, nullptr), outputs.data()), 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(take(status), "model run failed: out of memory allocating a "
                          "4611686018427387904-byte scratch buffer");
  EXPECT_EQ(outputs[0], nullptr);
  EXPECT_EQ(outputs[1], nullptr);
  // The instance still works afterwards.
  Inputs ok(4);
  ASSERT_EQ(run(ok.views), "");
  checkOutputs(ok, outputs[0], outputs[1]);
  releaseOutputs();
}

TEST_P(RuntimeTest, NonZeroReturnWithoutReason) {
  Inputs in(7);
  EXPECT_EQ(run(in.views), "model run failed: kiln_model_main returned 7");
}

TEST_P(RuntimeTest, ConcurrentInstances) {
  constexpr int kThreads = 4;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      kiln_instance_t *mine = nullptr;
      if (kiln_status_t *status = kiln_instance_create(model, &mine)) {
        kiln_status_free(status);
        ++failures;
        return;
      }
      for (int iter = 0; iter < 200; ++iter) {
        int64_t n = 1 + (t * 7 + iter) % 19;
        if (n == 7 || n == 13)
          n = 2;
        Inputs in(n);
        kiln_tensor_t *outs[2] = {nullptr, nullptr};
        kiln_status_t *status =
            kiln_instance_run(mine, in.views.data(), 2, outs, 2);
        if (status) {
          kiln_status_free(status);
          ++failures;
          continue;
        }
        const float *y = static_cast<const float *>(kiln_tensor_data(outs[0]));
        bool ok = kiln_tensor_dims(outs[0])[0] == n &&
                  *static_cast<const int64_t *>(kiln_tensor_data(outs[1])) == n;
        for (int64_t i = 0; ok && i < n * 4; ++i)
          ok = y[i] == in.expected(i / 4, i % 4);
        if (!ok)
          ++failures;
        kiln_tensor_release(outs[0]);
        kiln_tensor_release(outs[1]);
      }
      kiln_instance_release(mine);
    });
  }
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(failures.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(
    Models, RuntimeTest,
    ::testing::Values(KILN_TEST_FAKE_MODEL, KILN_TEST_LLD_MODEL),
    [](const ::testing::TestParamInfo<const char *> &info) {
      return info.index == 0 ? std::string("HostLinked")
                             : std::string("LldLinked");
    });

} // namespace
