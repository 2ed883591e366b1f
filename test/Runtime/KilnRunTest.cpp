//===- KilnRunTest.cpp - Tests of the kiln-run tool -----------------------===//
#include "TensorProto.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <vector>

using kiln::HostTensor;

namespace {

struct Result {
  int exitCode;
  std::string output; // stdout and stderr
};

Result runTool(const std::string &args) {
  std::string command = std::string(KILN_TEST_KILN_RUN) + " " + args + " 2>&1";
  Result result{-1, ""};
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return result;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    result.output.append(buffer, n);
  int status = pclose(pipe);
  result.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

HostTensor f32(std::vector<int64_t> dims, std::vector<float> values,
               const std::string &name = "") {
  HostTensor t;
  t.dtype = KILN_DTYPE_F32;
  t.dims = std::move(dims);
  t.name = name;
  t.data.resize(values.size() * 4);
  if (!values.empty())
    std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

class KilnRunTest : public ::testing::Test {
protected:
  void SetUp() override {
    if (!*KILN_TEST_KILN_RUN)
      GTEST_SKIP() << "kiln-run not built";
    mkdir(KILN_TEST_TMP_DIR, 0755);
    dir = std::string(KILN_TEST_TMP_DIR) + "/" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name();
    mkdir(dir.c_str(), 0755);
    // x = [[1,2,3,4],[5,6,7,8]], bias = [10, 20]
    write("x.pb", f32({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}, "x"));
    write("bias.pb", f32({2}, {10, 20}, "bias"));
    write("y.pb", f32({2, 4}, {12, 14, 16, 18, 30, 32, 34, 36}, "y"));
    HostTensor rows;
    rows.dtype = KILN_DTYPE_I64;
    rows.data.assign(8, 0);
    rows.data[0] = 2;
    write("rows.pb", rows);
  }
  std::string path(const std::string &file) { return dir + "/" + file; }
  void write(const std::string &file, const HostTensor &t) {
    std::string error;
    ASSERT_TRUE(kiln::writeTensorProtoFile(path(file), t, error)) << error;
  }
  std::string model() { return std::string(KILN_TEST_FAKE_MODEL); }
  std::string inputs() {
    return " --input " + path("x.pb") + " --input " + path("bias.pb");
  }

  std::string dir;
};

TEST_F(KilnRunTest, Help) {
  Result r = runTool("--help");
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.output.find("usage: kiln-run"), std::string::npos);
}

TEST_F(KilnRunTest, PrintsSummary) {
  Result r = runTool(model() + inputs());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "output 0 ('y'): f32 [2, 4] = [12, 14, 16, 18, 30, 32, "
                      "34, 36]\noutput 1 ('n rows'): i64 [] = [2]\n");
}

TEST_F(KilnRunTest, ExpectOk) {
  Result r = runTool(model() + inputs() + " --expect " + path("y.pb") +
                     " --expect " + path("rows.pb"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "output 0 ('y'): OK max_rel_err=0 max_abs_err=0\n"
                      "output 1 ('n rows'): OK max_rel_err=0 max_abs_err=0\n");
}

TEST_F(KilnRunTest, NamedInputs) {
  Result r = runTool(model() + " --input bias=" + path("bias.pb") +
                     " --input x=" + path("x.pb") + " --expect " +
                     path("y.pb") + " --expect " + path("rows.pb"));
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(KilnRunTest, ExpectMismatch) {
  write("y_bad.pb", f32({2, 4}, {12, 14, 16, 18, 30, 32, 34, 36.5f}));
  Result r = runTool(model() + inputs() + " --expect " + path("y_bad.pb") +
                     " --expect " + path("rows.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(r.output.find("output 0 ('y'): MISMATCH 1 of 8 elements differ "
                          "(first at [1, 3]: got 36, expected 36.5)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("kiln-run: 1 of 2 outputs differ from --expect"),
            std::string::npos);
  // Within a loose tolerance it passes.
  r = runTool(model() + inputs() + " --expect " + path("y_bad.pb") +
              " --expect " + path("rows.pb") + " --rtol 0.02");
  EXPECT_EQ(r.exitCode, 0) << r.output;
}

TEST_F(KilnRunTest, ExpectShapeMismatch) {
  write("y_shape.pb", f32({4, 2}, {12, 14, 16, 18, 30, 32, 34, 36}));
  Result r = runTool(model() + inputs() + " --expect " + path("y_shape.pb") +
                     " --expect " + path("rows.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_NE(
      r.output.find("output 0 ('y'): MISMATCH shape [2, 4], expected [4, 2]"),
      std::string::npos)
      << r.output;
}

TEST_F(KilnRunTest, OutputDir) {
  Result r = runTool(model() + inputs() + " --output-dir " + dir);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "");
  HostTensor y;
  std::string error;
  ASSERT_TRUE(kiln::readTensorProtoFile(path("output_0.pb"), y, error))
      << error;
  EXPECT_EQ(y.name, "y");
  EXPECT_EQ(y.dims, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(kiln::elementAsDouble(y.dtype, y.data.data(), 7), 36.0);
  HostTensor rows;
  ASSERT_TRUE(kiln::readTensorProtoFile(path("output_1.pb"), rows, error));
  EXPECT_EQ(rows.name, "n rows");

  r = runTool(model() + inputs() + " --output-dir " + dir + "/missing");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: cannot write '" + dir +
                          "/missing/output_0.pb': No such file or directory\n");
}

TEST_F(KilnRunTest, Benchmark) {
  // --benchmark N is --iterations N.
  Result r = runTool(model() + inputs() + " --benchmark 20 --warmup-ms 5");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("benchmark: 20 iterations in "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\nthroughput: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("time (ms)        mean        min        p50        "
                          "p90        p95        p99        max\nlatency  "),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("h2d"), std::string::npos) << "cpu: no split";
}

TEST_F(KilnRunTest, VerbosePrintsDevice) {
  Result r = runTool("--verbose " + model() + inputs());
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output.rfind("device: cpu\n", 0), 0u) << r.output;
}

// A model for the cuda target, through the fake driver (CudaRuntimeTest.cpp).
TEST_F(KilnRunTest, CudaModel) {
  std::vector<float> x;
  for (int i = 0; i < 12; ++i)
    x.push_back(static_cast<float>(i));
  write("xc.pb", f32({3, 4}, x, "x"));
  const char *old = getenv("KILN_CUDA_DRIVER");
  std::string saved = old ? old : "";
  setenv("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER, 1);
  Result r = runTool(std::string(KILN_TEST_CUDA_MODEL) + " --verbose --input " +
                     path("xc.pb"));
  setenv("KILN_CUDA_DRIVER", "/nonexistent/libcuda.so.1", 1);
  Result missing =
      runTool(std::string(KILN_TEST_CUDA_MODEL) + " --input " + path("xc.pb"));
  if (old)
    setenv("KILN_CUDA_DRIVER", saved.c_str(), 1);
  else
    unsetenv("KILN_CUDA_DRIVER");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output, "device: cuda:sm_90\n"
                      "output 0 ('y'): f32 [3, 4] = [0.5, 1, 14, -94, 8.5, "
                      "9, 22, -86, ...]\n"
                      "output 1 ('total'): f32 [] = [-139.5]\n");
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_EQ(missing.output,
            "kiln-run: model compiled for cuda sm_90: cannot load the CUDA "
            "driver (/nonexistent/libcuda.so.1: cannot open shared object "
            "file: No such file or directory)\n");
}

/// The fake cuda model through kiln-run with the fake driver (and
/// FAKE_CUDA_MODE words).
Result runCuda(const std::string &args, const char *mode = nullptr) {
  const char *old = getenv("KILN_CUDA_DRIVER");
  std::string saved = old ? old : "";
  setenv("KILN_CUDA_DRIVER", KILN_TEST_FAKE_CUDA_DRIVER, 1);
  if (mode)
    setenv("FAKE_CUDA_MODE", mode, 1);
  Result r = runTool(std::string(KILN_TEST_CUDA_MODEL) + " " + args);
  unsetenv("FAKE_CUDA_MODE");
  if (old)
    setenv("KILN_CUDA_DRIVER", saved.c_str(), 1);
  else
    unsetenv("KILN_CUDA_DRIVER");
  return r;
}

std::string readAll(const std::string &path) {
  std::string text;
  FILE *file = std::fopen(path.c_str(), "r");
  if (!file)
    return text;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
    text.append(buffer, n);
  std::fclose(file);
  return text;
}

// The benchmark's H2D / compute / D2H split on a device: device events
// between the phases (the fake driver's clock: an input copy 3 ms, the
// kernels 1 + 2 ms, each of the two output copies 5 ms).
TEST_F(KilnRunTest, CudaBenchmarkSplit) {
  std::vector<float> x(12, 1.0f);
  write("xc.pb", f32({3, 4}, x, "x"));
  std::string times = path("times.json");
  Result r =
      runCuda("--input " + path("xc.pb") +
                  " --iterations 4 --warmup-ms 0 --export-times " + times,
              "copyclock");
  // Every run alike: mean, min, p50, ..., max the same.
  auto row = [](const char *name, double ms) {
    char line[128];
    std::snprintf(line, sizeof(line),
                  "\n%-10s %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f %10.4f\n",
                  name, ms, ms, ms, ms, ms, ms, ms);
    return std::string(line);
  };
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("benchmark: 4 iterations in "), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(row("h2d", 3)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(row("compute", 3)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(row("d2h", 10)), std::string::npos) << r.output;
  std::string json = readAll(times);
  EXPECT_NE(json.find("\"device\": \"cuda:sm_90\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"iterations\": 4,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"h2d_ms\": {\"mean\": 3.000000, "), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"compute_ms\": 3.000000, \"d2h_ms\": 10.000000}"),
            std::string::npos)
      << json;
}

// --profile: one more run with every launch timed, as a Chrome trace (on
// the device's track, with the phases in otherData); the instance option
// profile_path is no longer involved.
TEST_F(KilnRunTest, CudaProfile) {
  std::vector<float> x(12, 1.0f);
  write("xc.pb", f32({3, 4}, x, "x"));
  std::string trace = path("trace.json");
  std::remove(trace.c_str());
  Result r =
      runCuda("--input " + path("xc.pb") + " --benchmark 5 --profile " + trace,
              "copyclock");
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find("profile: 2 kernel launches in one run of "),
            std::string::npos)
      << r.output;
  std::string json = readAll(trace);
  EXPECT_EQ(json.rfind("{\"traceEvents\": [", 0), 0u) << json;
  EXPECT_NE(json.find("\"args\": {\"name\": \"cuda:sm_90 stream\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"scale\", \"cat\": \"kernel\", \"ph\": "
                      "\"X\", \"ts\": "),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"dur\": 1000.000, \"pid\": 1, \"tid\": 2, \"args\": "
                      "{\"launch\": 0, \"kernel_index\": 0}}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"add_weight_sum\", \"cat\": "
                      "\"kernel\", \"ph\": \"X\", "),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"h2d_us\": 3000.000, \"compute_us\": 3000.000, "
                      "\"d2h_us\": 10000.000"),
            std::string::npos)
      << json;
}

// --profile of a cpu model: the host clock around each kernel, named from
// the model's symbol table.
TEST_F(KilnRunTest, CpuProfile) {
  std::string trace = path("trace.json");
  Result r = runTool(model() + inputs() + " --profile " + trace);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_EQ(r.output.rfind("profile: 2 kernel launches in one run of ", 0), 0u)
      << r.output;
  EXPECT_NE(r.output.find(" (ONNX nodes of 0: from none)\n"), std::string::npos)
      << r.output;
  std::string json = readAll(trace);
  EXPECT_NE(json.find("{\"name\": \"scale_kernel\", \"cat\": \"kernel\", "
                      "\"ph\": \"X\", "),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\": \"add_bias_kernel\", \"cat\": "
                      "\"kernel\", \"ph\": \"X\", "),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"h2d_us\": null"), std::string::npos) << json;
  // The model's launch records name the nodes.
  r = runTool(std::string(KILN_TEST_SITES_MODEL) + inputs() + " --profile " +
              trace);
  EXPECT_EQ(r.exitCode, 0) << r.output;
  EXPECT_NE(r.output.find(" (ONNX nodes of 1: from the model's launch "
                          "records)\n"),
            std::string::npos)
      << r.output;
  json = readAll(trace);
  EXPECT_NE(json.find("\"args\": {\"launch\": 0, \"site\": 0, "
                      "\"onnx_nodes\": [\"mul,2\", \"Identity\"]}"),
            std::string::npos)
      << json;
}

TEST_F(KilnRunTest, Errors) {
  Result r = runTool(model() + inputs() + " --input " + path("x.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output,
            "kiln-run: model has 2 inputs (x, bias), got 3 --input\n");

  r = runTool(model() + " --input " + path("x.pb") + " --input " +
              path("nope.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: cannot open '" + path("nope.pb") +
                          "': No such file or directory\n");

  FILE *f = fopen(path("junk.pb").c_str(), "wb");
  fputs("\x0a\x05\x01", f);
  fclose(f);
  r = runTool(model() + " --input " + path("x.pb") + " --input " +
              path("junk.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: '" + path("junk.pb") +
                          "' is not a valid TensorProto: truncated or "
                          "malformed field 1 (dims)\n");

  write("bias3.pb", f32({3}, {1, 2, 3}));
  r = runTool(model() + " --input " + path("x.pb") + " --input " +
              path("bias3.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: input 1 ('bias'): dimension 0 is 3, expected "
                      "2 (symbol 'N' is 2 in input 0 ('x') dimension 0)\n");

  r = runTool("/nonexistent/model.so");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: cannot open model '/nonexistent/model.so': "
                      "No such file or directory\n");

  r = runTool(model() + " --bogus");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output,
            "kiln-run: unknown option '--bogus' (see kiln-run --help)\n");

  r = runTool(model() + inputs() + " --rtol abc");
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output,
            "kiln-run: --rtol expects a non-negative number, got 'abc'\n");

  r = runTool(model() + inputs() + " --expect " + path("y.pb"));
  EXPECT_EQ(r.exitCode, 1);
  EXPECT_EQ(r.output, "kiln-run: model has 2 outputs, got 1 --expect\n");
}

} // namespace
