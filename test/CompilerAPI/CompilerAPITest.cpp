//===- CompilerAPITest.cpp - kiln-c/compiler.h ----------------------------===//
//
// The compiler C API from a host program's side: options by name and their
// errors, compiles from a buffer and a file into models that run, bad
// models and unsupported operators as statuses naming the node, the cache
// (hits and misses by its counters, a second compiler on the same folder),
// compile_to_file, external weights, compiles and runs from 4 threads at
// once, and what kilnc uses: the output callback (dumps, diagnostics at
// their location, the report's summary, timing), compile_file_to_file,
// check_file, the stage pipelines, and options that bypass the cache. The models are built here with ONNX's protobuf classes, so each
// expected output is computed in the test.
//
//===----------------------------------------------------------------------===//

#include "kiln-c/compiler.h"

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {
/// y = Relu(x + c): x float [n, 4] (n symbolic unless `rows` > 0), c the
/// initializer [4] = {-1, 0.5, 2, -3} (with `bigConstant`, [64, 4]-shaped
/// weights of a MatMul instead, for external weights).
std::string makeModel(int64_t rows, const char *opDomain = "",
                      bool bigConstant = false) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  auto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(17);
  if (*opDomain) {
    auto *custom = model.add_opset_import();
    custom->set_domain(opDomain);
    custom->set_version(1);
  }
  onnx::GraphProto *g = model.mutable_graph();
  g->set_name("test");
  auto addValue = [](onnx::ValueInfoProto *v, const char *name,
                     std::vector<int64_t> dims) {
    v->set_name(name);
    auto *t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) {
      auto *dim = t->mutable_shape()->add_dim();
      if (d < 0)
        dim->set_dim_param("n");
      else
        dim->set_dim_value(d);
    }
  };
  int64_t inner = bigConstant ? 64 : 4;
  addValue(g->add_input(), "x", {rows > 0 ? rows : -1, inner});
  addValue(g->add_output(), "y", {rows > 0 ? rows : -1, 4});
  auto *c = g->add_initializer();
  c->set_name("c");
  c->set_data_type(onnx::TensorProto::FLOAT);
  if (bigConstant) {
    c->add_dims(64);
    c->add_dims(4);
    for (int i = 0; i < 256; ++i)
      c->add_float_data(i % 4 == 0 ? 1.0f : 0.0f);
  } else {
    c->add_dims(4);
    for (float v : {-1.0f, 0.5f, 2.0f, -3.0f})
      c->add_float_data(v);
  }
  auto *add = g->add_node();
  add->set_name("the_add");
  add->set_op_type(bigConstant ? "MatMul" : "Add");
  add->add_input("x");
  add->add_input("c");
  add->add_output("s");
  auto *relu = g->add_node();
  relu->set_name("the_relu");
  relu->set_op_type(*opDomain ? "FancyRelu" : "Relu");
  relu->set_domain(opDomain);
  relu->add_input("s");
  relu->add_output("y");
  std::string bytes;
  model.SerializeToString(&bytes);
  return bytes;
}

/// Takes a status, returning its code (OK for NULL) and message.
struct Status {
  kiln_status_code_t code = KILN_STATUS_OK;
  std::string message;
  Status(kiln_status_t *s) {
    code = kiln_status_code(s);
    message = kiln_status_message(s);
    kiln_status_free(s);
  }
};

/// Runs `model` on x = [rows, 4] with x[i][j] = i - j; returns y.
std::vector<float> run(kiln_model_t *model, int64_t rows, int64_t inner = 4) {
  kiln_instance_t *instance = nullptr;
  Status created(kiln_instance_create(model, &instance));
  EXPECT_EQ(created.code, KILN_STATUS_OK) << created.message;
  if (!instance)
    return {};
  std::vector<float> x(rows * inner);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < inner; ++j)
      x[i * inner + j] = float(i - j);
  int64_t dims[2] = {rows, inner};
  kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, dims, x.data()};
  kiln_tensor_t *out = nullptr;
  Status ran(kiln_instance_run(instance, &in, 1, &out, 1));
  EXPECT_EQ(ran.code, KILN_STATUS_OK) << ran.message;
  std::vector<float> y;
  if (out) {
    const float *p = static_cast<const float *>(kiln_tensor_data(out));
    y.assign(p, p + kiln_tensor_num_elements(out));
  }
  kiln_tensor_release(out);
  kiln_instance_release(instance);
  return y;
}

/// The expected y of makeModel for x[i][j] = i - j.
std::vector<float> expected(int64_t rows) {
  const float c[4] = {-1.0f, 0.5f, 2.0f, -3.0f};
  std::vector<float> y;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < 4; ++j)
      y.push_back(std::max(0.0f, float(i - j) + c[j]));
  return y;
}

class CompilerAPI : public ::testing::Test {
protected:
  void SetUp() override {
    dir = fs::path(KILN_TEST_TMP_DIR) /
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  kiln_compiler_t *makeCompiler(const fs::path &cache) {
    kiln_compiler_t *c = nullptr;
    Status s(kiln_compiler_create(cache.c_str(), &c));
    EXPECT_EQ(s.code, KILN_STATUS_OK) << s.message;
    return c;
  }
  kiln_compile_options_t *
  makeOptions(std::vector<std::pair<const char *, const char *>> settings) {
    kiln_compile_options_t *o = nullptr;
    EXPECT_EQ(Status(kiln_compile_options_create(&o)).code, KILN_STATUS_OK);
    for (auto [name, value] : settings) {
      Status s(kiln_compile_options_set(o, name, value));
      EXPECT_EQ(s.code, KILN_STATUS_OK) << name << ": " << s.message;
    }
    return o;
  }
  fs::path dir;
};
} // namespace

TEST_F(CompilerAPI, Version) {
  std::string v = kiln_compiler_version();
  EXPECT_EQ(v.rfind("kiln-compiler ", 0), 0u) << v;
  EXPECT_NE(v.find("(build "), std::string::npos) << v;
}

TEST_F(CompilerAPI, OptionErrors) {
  kiln_compile_options_t *o = makeOptions({});
  Status unknown(kiln_compile_options_set(o, "precison", "fp16"));
  EXPECT_EQ(unknown.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(unknown.message.find("unknown compile option 'precison'"),
            std::string::npos)
      << unknown.message;
  EXPECT_NE(unknown.message.find("precision"), std::string::npos);
  Status badPrecision(kiln_compile_options_set(o, "precision", "fp8"));
  EXPECT_EQ(badPrecision.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(
      badPrecision.message.find(
          "unknown precision 'fp8' (expected fp32, tf32, fp16, bf16 or int8)"),
      std::string::npos)
      << badPrecision.message;
  Status badTarget(kiln_compile_options_set(o, "target", "cuda:sm_42"));
  EXPECT_EQ(badTarget.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(badTarget.message.find("unknown CUDA chip 'sm_42'"),
            std::string::npos)
      << badTarget.message;
  Status badDim(kiln_compile_options_set(o, "dim", "n"));
  EXPECT_NE(badDim.message.find("--dim expects NAME=VALUE"), std::string::npos)
      << badDim.message;
  Status badLevel(kiln_compile_options_set(o, "O", "7"));
  EXPECT_EQ(badLevel.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(Status(kiln_compile_options_set(o, nullptr, "1")).code,
            KILN_STATUS_INVALID_ARGUMENT);
  kiln_compile_options_free(o);
}

TEST_F(CompilerAPI, BufferCompileRunsAtTwoSizes) {
  kiln_compiler_t *c = makeCompiler("");
  std::string bytes = makeModel(-1);
  kiln_model_t *model = nullptr;
  Status s(kiln_compiler_compile_buffer(c, bytes.data(), bytes.size(), nullptr,
                                        "relu-add", nullptr, &model));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_EQ(run(model, 3), expected(3));
  EXPECT_EQ(run(model, 7), expected(7));
  kiln_model_release(model);
  uint64_t hits = 1, misses = 0;
  kiln_compiler_cache_counters(c, &hits, &misses);
  EXPECT_EQ(hits, 0u);
  EXPECT_EQ(misses, 1u);
  EXPECT_STREQ(kiln_compiler_cache_dir(c), "");
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, FileCompileWithOptions) {
  std::string bytes = makeModel(-1);
  fs::path path = dir / "model.onnx";
  FILE *f = std::fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  kiln_compiler_t *c = makeCompiler("");
  kiln_compile_options_t *o = makeOptions({{"dim", "n=5"}, {"O", "0"}});
  kiln_model_t *model = nullptr;
  Status s(kiln_compiler_compile_file(c, path.c_str(), o, &model));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  kiln_value_info_t info;
  ASSERT_EQ(Status(kiln_model_input_info(model, 0, &info)).code,
            KILN_STATUS_OK);
  EXPECT_EQ(info.dims[0], 5); // fixed by dim n=5
  EXPECT_EQ(run(model, 5), expected(5));
  kiln_model_release(model);
  Status missing(
      kiln_compiler_compile_file(c, (dir / "none.onnx").c_str(), o, &model));
  EXPECT_EQ(missing.code, KILN_STATUS_NOT_FOUND) << missing.message;
  kiln_compile_options_free(o);
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, BadModelsAreStatuses) {
  kiln_compiler_t *c = makeCompiler("");
  kiln_model_t *model = nullptr;
  const char garbage[] = "this is not a model";
  Status bad(kiln_compiler_compile_buffer(c, garbage, sizeof(garbage), nullptr,
                                          "garbage.onnx", nullptr, &model));
  EXPECT_EQ(bad.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(bad.message.find("garbage.onnx"), std::string::npos) << bad.message;
  EXPECT_EQ(model, nullptr);
  std::string unsupported = makeModel(2, "com.example");
  Status custom(kiln_compiler_compile_buffer(c, unsupported.data(),
                                             unsupported.size(), nullptr,
                                             "custom.onnx", nullptr, &model));
  EXPECT_EQ(custom.code, KILN_STATUS_UNIMPLEMENTED) << custom.message;
  EXPECT_NE(custom.message.find("the_relu"), std::string::npos)
      << custom.message;
  EXPECT_NE(custom.message.find("FancyRelu"), std::string::npos)
      << custom.message;
  EXPECT_EQ(model, nullptr);
  // A dim that contradicts the model: one message naming the input.
  kiln_compile_options_t *o = makeOptions({{"shapes", "x:2x5"}});
  std::string fixed = makeModel(-1);
  Status shape(kiln_compiler_compile_buffer(c, fixed.data(), fixed.size(),
                                            nullptr, "fixed.onnx", o, &model));
  EXPECT_EQ(shape.code, KILN_STATUS_INVALID_ARGUMENT) << shape.message;
  EXPECT_NE(shape.message.find("'x'"), std::string::npos) << shape.message;
  kiln_compile_options_free(o);
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, CacheHitsAndMisses) {
  fs::path cache = dir / "cache";
  kiln_compiler_t *c = makeCompiler(cache);
  EXPECT_EQ(std::string(kiln_compiler_cache_dir(c)), cache.string());
  std::string bytes = makeModel(-1);
  kiln_compile_options_t *fp32 = makeOptions({});
  kiln_compile_options_t *o0 = makeOptions({{"O", "0"}});
  auto compile = [&](kiln_compiler_t *comp, kiln_compile_options_t *o) {
    kiln_model_t *model = nullptr;
    Status s(kiln_compiler_compile_buffer(comp, bytes.data(), bytes.size(),
                                          nullptr, "m", o, &model));
    EXPECT_EQ(s.code, KILN_STATUS_OK) << s.message;
    if (model)
      EXPECT_EQ(run(model, 4), expected(4));
    kiln_model_release(model);
  };
  auto counters = [](kiln_compiler_t *comp) {
    uint64_t h = 0, m = 0;
    kiln_compiler_cache_counters(comp, &h, &m);
    return std::make_pair(h, m);
  };
  compile(c, fp32);
  EXPECT_EQ(counters(c), std::make_pair(uint64_t(0), uint64_t(1)));
  compile(c, fp32);
  EXPECT_EQ(counters(c), std::make_pair(uint64_t(1), uint64_t(1)));
  compile(c, o0); // other options: another entry
  EXPECT_EQ(counters(c), std::make_pair(uint64_t(1), uint64_t(2)));
  int sos = 0;
  for (auto &e : fs::directory_iterator(cache))
    sos += e.path().extension() == ".so";
  EXPECT_EQ(sos, 2);
  // Another compiler (another process, in effect) finds the same entries.
  kiln_compiler_t *again = makeCompiler(cache);
  compile(again, o0);
  EXPECT_EQ(counters(again), std::make_pair(uint64_t(1), uint64_t(0)));
  kiln_compiler_free(again);
  kiln_compile_options_free(fp32);
  kiln_compile_options_free(o0);
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, CompileToFile) {
  kiln_compiler_t *c = makeCompiler("");
  std::string bytes = makeModel(3);
  fs::path so = dir / "out.so";
  Status s(kiln_compiler_compile_to_file(c, bytes.data(), bytes.size(), nullptr,
                                         "m", nullptr, so.c_str()));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  kiln_model_t *model = nullptr;
  ASSERT_EQ(Status(kiln_model_load(so.c_str(), &model)).code, KILN_STATUS_OK);
  EXPECT_EQ(run(model, 3), expected(3));
  kiln_model_release(model);
  kiln_compiler_free(c);
}

// --target=cuda writes one library with an sm_90a and an sm_80 image; the
// runtime takes the first the device runs (the fake driver plays an H200,
// an A100 or a T4), or the one the device_chip option names.
TEST_F(CompilerAPI, CudaImages) {
  kiln_compiler_t *c = makeCompiler("");
  std::string bytes = makeModel(3, "", /*bigConstant=*/true);
  auto compile = [&](const char *target) {
    kiln_compile_options_t *o = makeOptions({{"target", target}});
    fs::path so = dir / (std::string(target).replace(4, 1, "_") + ".so");
    Status s(kiln_compiler_compile_to_file(c, bytes.data(), bytes.size(),
                                           nullptr, "m", o, so.c_str()));
    EXPECT_EQ(s.code, KILN_STATUS_OK) << s.message;
    kiln_compile_options_free(o);
    return so;
  };
  fs::path fat = compile("cuda"), one = compile("cuda:sm_90a");
  // "<code>: <device>" for a load with `chip` as the device_chip option.
  auto load = [](const fs::path &so, const char *chip = nullptr) {
    kiln_model_options_t options;
    kiln_model_options_init(&options);
    options.driver_path = KILN_TEST_FAKE_CUDA_DRIVER;
    options.device_chip = chip;
    kiln_model_t *model = nullptr;
    Status s(kiln_model_load_with_options(so.c_str(), &options, &model));
    std::string result = s.code == KILN_STATUS_OK
                             ? std::string(kiln_model_device(model))
                             : std::to_string(int(s.code)) + ": " + s.message;
    kiln_model_release(model);
    return result;
  };
  const char *mode = getenv("FAKE_CUDA_MODE");
  std::string saved = mode ? mode : "";
  auto setMode = [](const char *m) { setenv("FAKE_CUDA_MODE", m, 1); };
  setMode("");
  EXPECT_EQ(load(fat), "cuda:sm_90a");
  EXPECT_EQ(load(fat, "sm_80"), "cuda:sm_80");
  EXPECT_EQ(load(fat, "sm_75"),
            std::to_string(int(KILN_STATUS_INVALID_ARGUMENT)) +
                ": the device_chip option is 'sm_75': the model has device "
                "images for sm_90a, sm_80");
  setenv("KILN_CUDA_CHIP", "sm_80", 1);
  EXPECT_EQ(load(fat), "cuda:sm_80");
  EXPECT_EQ(load(fat, "sm_90a"), "cuda:sm_90a"); // the option wins
  unsetenv("KILN_CUDA_CHIP");
  // A library of one image ignores the chip.
  EXPECT_EQ(load(one, "sm_80"), "cuda:sm_90a");
  setMode("cc80");
  EXPECT_EQ(load(fat), "cuda:sm_80");
  setMode("cc75");
  EXPECT_EQ(load(fat),
            std::to_string(int(KILN_STATUS_FAILED_PRECONDITION)) +
                ": none of the model's device images (sm_90a, sm_80) runs "
                "here: model compiled for cuda sm_90a: CUDA device 0 (Fake "
                "T4) has compute capability 7.5, the model needs sm_90a "
                "(compute capability 9.0 exactly); model compiled for cuda "
                "sm_80: CUDA device 0 (Fake T4) has compute capability 7.5, "
                "the model needs sm_80 (compute capability 8.0 or newer)");
  if (mode)
    setMode(saved.c_str());
  else
    unsetenv("FAKE_CUDA_MODE");
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, ExternalWeights) {
  std::string bytes = makeModel(2, "", /*bigConstant=*/true);
  kiln_compile_options_t *o = makeOptions({{"external-weights", "1"}});
  // Without a cache, a loaded model has nowhere to keep its weights file.
  kiln_compiler_t *noCache = makeCompiler("");
  kiln_model_t *model = nullptr;
  Status refused(kiln_compiler_compile_buffer(
      noCache, bytes.data(), bytes.size(), nullptr, "w", o, &model));
  EXPECT_EQ(refused.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(refused.message.find("external-weights needs a cache folder"),
            std::string::npos)
      << refused.message;
  // compile_to_file writes out.weights beside out.so, as kilnc does.
  fs::path so = dir / "out.so";
  Status toFile(kiln_compiler_compile_to_file(
      noCache, bytes.data(), bytes.size(), nullptr, "w", o, so.c_str()));
  ASSERT_EQ(toFile.code, KILN_STATUS_OK) << toFile.message;
  EXPECT_TRUE(fs::exists(dir / "out.weights"));
  kiln_compiler_free(noCache);
  // Through the cache: <key>.so with <key>.weights.
  kiln_compiler_t *c = makeCompiler(dir / "cache");
  Status s(kiln_compiler_compile_buffer(c, bytes.data(), bytes.size(), nullptr,
                                        "w", o, &model));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  // y = Relu(x @ c): c picks column 0 of x into every output column.
  std::vector<float> y = run(model, 2, 64);
  ASSERT_EQ(y.size(), 8u);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      float sum = 0; // x[i][k] = i - k for the k with c[k][j] = 1
      for (int k = 0; k < 64; k += 4)
        sum += float(i - k);
      (void)j;
      EXPECT_EQ(y[i * 4 + j], std::max(0.0f, sum));
    }
  kiln_model_release(model);
  int weights = 0;
  for (auto &e : fs::directory_iterator(dir / "cache"))
    weights += e.path().extension() == ".weights";
  EXPECT_EQ(weights, 1);
  kiln_compile_options_free(o);
  kiln_compiler_free(c);
}

TEST_F(CompilerAPI, ConcurrentCompilesAndRuns) {
  kiln_compiler_t *c = makeCompiler(dir / "cache");
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      // Two threads share a model (and may race for its cache entry), two
      // have their own.
      std::string bytes = makeModel(t < 2 ? -1 : t + 1);
      kiln_model_t *model = nullptr;
      Status s(kiln_compiler_compile_buffer(c, bytes.data(), bytes.size(),
                                            nullptr, "m", nullptr, &model));
      EXPECT_EQ(s.code, KILN_STATUS_OK) << s.message;
      if (!model)
        return;
      int64_t rows = t + 1;
      if (run(model, rows) == expected(rows))
        ++ok;
      kiln_model_release(model);
    });
  for (auto &t : threads)
    t.join();
  EXPECT_EQ(ok.load(), 4);
  uint64_t hits = 0, misses = 0;
  kiln_compiler_cache_counters(c, &hits, &misses);
  EXPECT_EQ(hits + misses, 4u);
  EXPECT_GE(misses, 3u);
  kiln_compiler_free(c);
}

// The header-only C++ wrapper over both APIs.
#include "kiln-c/compiler.hpp"

TEST_F(CompilerAPI, CppWrapper) {
  kiln::Compiler compiler((dir / "cache").c_str());
  kiln::CompileOptions options{{"O", "2"}, {"dim", "n=3"}};
  kiln::Model model = compiler.compileBuffer(makeModel(-1), &options, "m");
  EXPECT_EQ(model.numInputs(), 1u);
  EXPECT_EQ(model.input(0).dims[0], 3);
  kiln::Model shared = model; // a second reference
  kiln::Instance instance(shared);
  std::vector<float> x = {0, -1, -2, -3, 1, 0, -1, -2, 2, 1, 0, -1};
  std::vector<kiln::Tensor> y = instance.run({kiln::view(x.data(), {3, 4})});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(
      std::vector<float>(y[0].data<float>(), y[0].data<float>() + y[0].size()),
      expected(3));
  EXPECT_EQ(compiler.cacheCounters(), std::make_pair(uint64_t(0), uint64_t(1)));
  try {
    kiln::CompileOptions bad{{"precision", "fp64"}};
    ADD_FAILURE() << "no exception";
  } catch (const kiln::Error &e) {
    EXPECT_EQ(e.code(), KILN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("precision"), std::string::npos);
  }
  EXPECT_THROW(compiler.compileBuffer("junk"), kiln::Error);
}

TEST_F(CompilerAPI, Check) {
  std::string ok = makeModel(2), custom = makeModel(2, "com.example");
  char *report = nullptr;
  size_t unsupported = 7;
  Status s(
      kiln_compiler_check(ok.data(), ok.size(), "ok", &report, &unsupported));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_EQ(unsupported, 0u);
  EXPECT_NE(std::string(report).find("2 operators, 2 nodes: all supported"),
            std::string::npos)
      << report;
  kiln_compiler_string_free(report);
  ASSERT_EQ(Status(kiln_compiler_check(custom.data(), custom.size(), "custom",
                                       &report, &unsupported))
                .code,
            KILN_STATUS_OK);
  EXPECT_EQ(unsupported, 1u);
  EXPECT_NE(std::string(report).find("com.example.FancyRelu"),
            std::string::npos)
      << report;
  kiln_compiler_string_free(report);
  Status bad(
      kiln_compiler_check("junk", 4, "junk.onnx", &report, &unsupported));
  EXPECT_EQ(bad.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(bad.message.find("'junk.onnx' is not an ONNX model"),
            std::string::npos);
}

namespace {
/// The text a compile sent to the output callback, by kind.
struct Collected {
  std::string text[4];
  static void write(void *user, kiln_compile_output_kind_t kind,
                    const char *data, size_t size) {
    static_cast<Collected *>(user)->text[kind].append(data, size);
  }
};
} // namespace

TEST_F(CompilerAPI, KilncFlags) {
  fs::path model = dir / "m.onnx";
  {
    std::string bytes = makeModel(3);
    FILE *f = std::fopen(model.c_str(), "wb");
    ASSERT_TRUE(f);
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
  // A stage's IR, without an output file: the stages alone.
  kiln_compiler_t *c = makeCompiler(dir / "cache");
  Collected dump;
  kiln_compile_options_t *o = makeOptions({{"dump-after", "graph"}});
  kiln_compile_options_set_output(o, Collected::write, &dump);
  Status s(kiln_compiler_compile_file_to_file(c, model.c_str(), o, nullptr));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_NE(
      dump.text[KILN_COMPILE_OUTPUT_LISTING].find("func.func @main_graph"),
      std::string::npos);
  EXPECT_TRUE(dump.text[KILN_COMPILE_OUTPUT_ERROR].empty());
  kiln_compile_options_free(o);

  // The report, its summary, timing and the library; such a compile
  // bypasses the cache (a miss; nothing stored there).
  Collected reported;
  o = makeOptions({{"report", (dir / "r.json").c_str()}, {"timing", "1"}});
  kiln_compile_options_set_output(o, Collected::write, &reported);
  fs::path so = dir / "m.so";
  s = Status(
      kiln_compiler_compile_file_to_file(c, model.c_str(), o, so.c_str()));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_TRUE(fs::exists(so));
  EXPECT_TRUE(fs::exists(dir / "r.json"));
  EXPECT_NE(reported.text[KILN_COMPILE_OUTPUT_LISTING].find("kilnc report:"),
            std::string::npos)
      << reported.text[KILN_COMPILE_OUTPUT_LISTING];
  EXPECT_NE(reported.text[KILN_COMPILE_OUTPUT_TIMING].find("llvm-codegen"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "cache"));
  uint64_t hits = 9, misses = 9;
  kiln_compiler_cache_counters(c, &hits, &misses);
  EXPECT_EQ(hits, 0u);
  EXPECT_EQ(misses, 2u);
  kiln_model_t *loaded = nullptr;
  ASSERT_EQ(Status(kiln_model_load(so.c_str(), &loaded)).code, KILN_STATUS_OK);
  EXPECT_EQ(run(loaded, 3), expected(3));
  kiln_model_release(loaded);
  kiln_compile_options_free(o);

  // An error at its location, streamed as it comes, and in the status.
  Collected failed;
  o = makeOptions({{"shapes", "x:3x5"}});
  kiln_compile_options_set_output(o, Collected::write, &failed);
  s = Status(
      kiln_compiler_compile_file_to_file(c, model.c_str(), o, so.c_str()));
  EXPECT_EQ(s.code, KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message.find("dim 1 of input 'x' is 4 in the model"),
            std::string::npos)
      << s.message;
  EXPECT_NE(failed.text[KILN_COMPILE_OUTPUT_ERROR].find(
                model.string() + ":0:0: error: --shapes x:3x5"),
            std::string::npos)
      << failed.text[KILN_COMPILE_OUTPUT_ERROR];
  // A model file that cannot be read: the same, at the file.
  failed = Collected();
  s = Status(kiln_compiler_compile_file_to_file(
      c, (dir / "missing.onnx").c_str(), o, so.c_str()));
  EXPECT_EQ(s.code, KILN_STATUS_NOT_FOUND);
  EXPECT_NE(failed.text[KILN_COMPILE_OUTPUT_ERROR].find(
                "missing.onnx:0:0: error: cannot read"),
            std::string::npos)
      << failed.text[KILN_COMPILE_OUTPUT_ERROR];
  kiln_compile_options_free(o);

  // Checks between options, made when compiling.
  o = makeOptions({{"external-weights-min-bytes", "8"}});
  s = Status(
      kiln_compiler_compile_file_to_file(c, model.c_str(), o, so.c_str()));
  EXPECT_EQ(s.message, "--external-weights-min-bytes needs --external-weights");
  kiln_compile_options_free(o);
  // Assembly is for files only.
  o = makeOptions({{"S", "1"}});
  kiln_model_t *none = nullptr;
  s = Status(kiln_compiler_compile_file(c, model.c_str(), o, &none));
  EXPECT_EQ(s.code, KILN_STATUS_INVALID_ARGUMENT);
  fs::path asmPath = dir / "m.s";
  s = Status(
      kiln_compiler_compile_file_to_file(c, model.c_str(), o, asmPath.c_str()));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_GT(fs::file_size(asmPath), 0u);
  kiln_compile_options_free(o);
  // A named weights file.
  std::string big = makeModel(2, "", /*bigConstant=*/true);
  fs::path weights = dir / "named.bin";
  o = makeOptions({{"external-weights", weights.c_str()},
                   {"external-weights-min-bytes", "32"}});
  s = Status(kiln_compiler_compile_to_file(c, big.data(), big.size(), nullptr,
                                           "big", o, so.c_str()));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_TRUE(fs::exists(weights));
  EXPECT_TRUE(fs::exists(dir / "named.bin.json"));
  kiln_compile_options_free(o);
  kiln_compiler_free(c);

  // Stage pipelines without a model, and their errors.
  o = makeOptions({{"precision", "fp16"}});
  char *text = nullptr;
  s = Status(kiln_compile_options_pipeline(o, "graph", &text));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_NE(std::string(text).find("kiln-mixed-precision"), std::string::npos)
      << text;
  kiln_compiler_string_free(text);
  s = Status(kiln_compile_options_pipeline(o, "import", &text));
  EXPECT_NE(s.message.find("'import' is not a pass pipeline"),
            std::string::npos);
  s = Status(kiln_compile_options_pipeline(o, "frobnicate", &text));
  EXPECT_NE(s.message.find("unknown stage 'frobnicate' for --print-pipeline"),
            std::string::npos);
  kiln_compile_options_free(o);

  // check_file.
  size_t unsupported = 9;
  s = Status(kiln_compiler_check_file(model.c_str(), &text, &unsupported));
  ASSERT_EQ(s.code, KILN_STATUS_OK) << s.message;
  EXPECT_EQ(unsupported, 0u);
  kiln_compiler_string_free(text);
  s = Status(kiln_compiler_check_file((dir / "missing.onnx").c_str(), &text,
                                      &unsupported));
  EXPECT_EQ(s.code, KILN_STATUS_NOT_FOUND);
  EXPECT_NE(s.message.find("cannot read '"), std::string::npos);
}
