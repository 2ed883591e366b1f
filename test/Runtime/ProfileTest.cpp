//===- ProfileTest.cpp - kiln_instance_set_profiling and its profiles -----===//
//
// CPU kernels timed by the host clock and named from model.so's symbol
// table or the model's `launch` records; device kernels and the phases of a
// run timed by the fake CUDA driver's events (its clock: scale takes 1 ms,
// add_weight_sum 2 ms; with FAKE_CUDA_MODE=copyclock an input copy 3 ms and
// an output copy 5 ms).
//
//===----------------------------------------------------------------------===//
#include "CudaTestSupport.h"

#include <string>
#include <vector>

using namespace kiln_test;

namespace {

std::string withCode(kiln_status_t *status) {
  std::string code = kiln_status_code_name(kiln_status_code(status));
  return status ? code + ": " + take(status) : "";
}

/// The fake CPU model (fake_model.c): y = 2 * x + bias, two kernels.
class CpuProfileTest : public ::testing::Test {
protected:
  void load(const char *path) {
    ASSERT_EQ(take(kiln_model_load(path, &model)), "");
    ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  }
  void TearDown() override {
    kiln_instance_release(instance);
    kiln_model_release(model);
  }
  std::string run(int64_t n = 2) {
    std::vector<float> x(static_cast<size_t>(n) * 4, 1.0f), bias(n, 0.5f);
    int64_t xDims[2] = {n, 4}, bDims[1] = {n};
    kiln_tensor_view_t in[2] = {{KILN_DTYPE_F32, 2, xDims, x.data()},
                                {KILN_DTYPE_F32, 1, bDims, bias.data()}};
    kiln_tensor_t *out[2] = {nullptr, nullptr};
    std::string status = withCode(kiln_instance_run(instance, in, 2, out, 2));
    kiln_tensor_release(out[0]);
    kiln_tensor_release(out[1]);
    return status;
  }
  kiln_run_profile_t last(std::string *error = nullptr) {
    kiln_run_profile_t p;
    std::memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    std::string status = withCode(kiln_instance_last_profile(instance, &p));
    if (error)
      *error = status;
    else
      EXPECT_EQ(status, "");
    return p;
  }
  kiln_model_t *model = nullptr;
  kiln_instance_t *instance = nullptr;
};

TEST_F(CpuProfileTest, KernelsNamedFromTheSymbolTable) {
  load(KILN_TEST_FAKE_MODEL);
  std::string error;
  last(&error);
  EXPECT_EQ(error, "FAILED_PRECONDITION: kiln_instance_last_profile: the "
                   "instance has no profiled run (call "
                   "kiln_instance_set_profiling, then run it)");
  ASSERT_EQ(run(), ""); // not profiled
  last(&error);
  EXPECT_NE(error, "");
  ASSERT_EQ(
      withCode(kiln_instance_set_profiling(instance, KILN_PROFILE_KERNELS)),
      "");
  ASSERT_EQ(run(), "");
  kiln_run_profile_t p = last();
  EXPECT_EQ(p.struct_size, sizeof(p));
  EXPECT_EQ(p.flags, KILN_PROFILE_KERNELS);
  EXPECT_EQ(p.h2d_us, -1);
  EXPECT_EQ(p.compute_us, -1);
  EXPECT_EQ(p.d2h_us, -1);
  EXPECT_STREQ(p.stopped, "");
  ASSERT_EQ(p.num_events, 2u);
  EXPECT_STREQ(p.events[0].kernel, "scale_kernel");
  EXPECT_STREQ(p.events[1].kernel, "add_bias_kernel");
  double end = 0;
  for (size_t i = 0; i < 2; ++i) {
    const kiln_kernel_event_t &e = p.events[i];
    EXPECT_EQ(e.index, -1);
    EXPECT_EQ(e.site, -1);
    EXPECT_EQ(e.nodes, nullptr);
    EXPECT_EQ(e.num_nodes, 0u);
    EXPECT_EQ(e.on_device, 0);
    EXPECT_GE(e.start_us, end); // in order, not overlapping
    EXPECT_GE(e.duration_us, 0);
    end = e.start_us + e.duration_us;
  }
  EXPECT_LE(end, p.run_us);

  // A failed run (N = 7 fails in the host program) leaves no profile.
  EXPECT_NE(run(7), "");
  last(&error);
  EXPECT_NE(error, "");
  ASSERT_EQ(run(3), "");
  EXPECT_EQ(last().num_events, 2u);
  // Off: no profile, and nothing measured.
  ASSERT_EQ(withCode(kiln_instance_set_profiling(instance, KILN_PROFILE_OFF)),
            "");
  ASSERT_EQ(run(), "");
  last(&error);
  EXPECT_NE(error, "");
}

TEST_F(CpuProfileTest, LaunchRecordsNameTheNodes) {
  load(KILN_TEST_SITES_MODEL);
  ASSERT_EQ(
      withCode(kiln_instance_set_profiling(instance, KILN_PROFILE_KERNELS)),
      "");
  ASSERT_EQ(run(), "");
  kiln_run_profile_t p = last();
  ASSERT_EQ(p.num_events, 2u);
  EXPECT_EQ(p.events[0].site, 0);
  EXPECT_EQ(p.events[1].site, 1);
  EXPECT_STREQ(p.events[0].kernel, "scale_kernel");
  ASSERT_EQ(p.events[0].num_nodes, 2u);
  EXPECT_STREQ(p.events[0].nodes[0], "mul,2"); // %2C decoded
  EXPECT_STREQ(p.events[0].nodes[1], "Identity");
  EXPECT_EQ(p.events[1].num_nodes, 0u);
  EXPECT_NE(p.events[1].nodes, nullptr);
}

TEST_F(CpuProfileTest, Arguments) {
  load(KILN_TEST_FAKE_MODEL);
  EXPECT_EQ(withCode(kiln_instance_set_profiling(instance, 4)),
            "INVALID_ARGUMENT: kiln_instance_set_profiling: unknown flags 0x4 "
            "(KILN_PROFILE_KERNELS, KILN_PROFILE_PHASES)");
  EXPECT_EQ(withCode(kiln_instance_set_profiling(nullptr, 1)),
            "INVALID_ARGUMENT: instance is NULL");
  // Phases of a cpu model: nothing to measure, the run time only.
  ASSERT_EQ(
      withCode(kiln_instance_set_profiling(instance, KILN_PROFILE_PHASES)), "");
  ASSERT_EQ(run(), "");
  kiln_run_profile_t p = last();
  EXPECT_EQ(p.num_events, 0u);
  EXPECT_EQ(p.compute_us, -1);
  EXPECT_GT(p.run_us, 0);
  // A caller built against an older header gets the fields it knows.
  kiln_run_profile_t older;
  std::memset(&older, 0x7f, sizeof(older));
  older.struct_size = offsetof(kiln_run_profile_t, h2d_us);
  ASSERT_EQ(withCode(kiln_instance_last_profile(instance, &older)), "");
  EXPECT_EQ(older.flags, KILN_PROFILE_PHASES);
  EXPECT_NE(older.num_events, 0u); // past struct_size: untouched
  older.struct_size = sizeof(older) + 8;
  EXPECT_EQ(withCode(kiln_instance_last_profile(instance, &older)),
            "INVALID_ARGUMENT: kiln_run_profile: struct_size is " +
                std::to_string(sizeof(older) + 8) + ", expected " +
                std::to_string(sizeof(older)) +
                " (set it to sizeof(kiln_run_profile_t))");
}

/// The fake cuda model on the fake driver.
class CudaTimingTest : public CudaRunTest {
protected:
  kiln_run_profile_t last() {
    kiln_run_profile_t p;
    std::memset(&p, 0, sizeof(p));
    p.struct_size = sizeof(p);
    EXPECT_EQ(take(kiln_instance_last_profile(instance, &p)), "");
    return p;
  }
};

TEST_F(CudaTimingTest, KernelsAndPhases) {
  env.set("FAKE_CUDA_MODE", "copyclock");
  runAndCheck(Case(3, 1.0f)); // uploads the weight
  ASSERT_EQ(take(kiln_instance_set_profiling(
                instance, KILN_PROFILE_KERNELS | KILN_PROFILE_PHASES)),
            "");
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, 2.0f + i));
  EXPECT_EQ(delta().capture_attempts, 0); // no graphs while timing launches
  kiln_run_profile_t p = last();
  EXPECT_EQ(p.flags, KILN_PROFILE_KERNELS | KILN_PROFILE_PHASES);
  EXPECT_STREQ(p.stopped, "");
  // One input copy (3 ms), the kernels (1 + 2 ms), two output copies.
  EXPECT_EQ(p.h2d_us, 3000);
  EXPECT_EQ(p.compute_us, 3000);
  EXPECT_EQ(p.d2h_us, 10000);
  ASSERT_EQ(p.num_events, 2u);
  const kiln_kernel_event_t &scale = p.events[0], &sum = p.events[1];
  EXPECT_STREQ(scale.kernel, "scale");
  EXPECT_EQ(scale.index, 0);
  EXPECT_EQ(scale.on_device, 1);
  EXPECT_EQ(scale.site, -1);
  EXPECT_EQ(scale.duration_us, 1000);
  EXPECT_STREQ(sum.kernel, "add_weight_sum");
  EXPECT_EQ(sum.index, 1);
  EXPECT_EQ(sum.duration_us, 2000);
  // Device time from mark 0, placed where the host recorded it: the
  // kernels follow the 3 ms input copy, one after the other.
  EXPECT_GE(scale.start_us, 3000);
  EXPECT_LT(scale.start_us, 3000 + p.run_us);
  EXPECT_EQ(sum.start_us - scale.start_us, 1000);

  // Phases only: graphs come back (captured on the second run), and a
  // replay is timed too.
  ASSERT_EQ(take(kiln_instance_set_profiling(instance, KILN_PROFILE_PHASES)),
            "");
  fake_cuda_stats mid = driver->stats();
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, 5.0f + i));
  EXPECT_EQ(driver->stats().captures - mid.captures, 1);
  // (the capture's launch and two replays)
  EXPECT_EQ(driver->stats().graph_launches - mid.graph_launches, 3);
  p = last();
  EXPECT_EQ(p.num_events, 0u);
  EXPECT_EQ(p.h2d_us, 3000);
  EXPECT_EQ(p.compute_us, 3000);
  EXPECT_EQ(p.d2h_us, 10000);
  env.set("FAKE_CUDA_MODE", nullptr);
  ASSERT_EQ(take(kiln_instance_set_profiling(instance, KILN_PROFILE_OFF)), "");
  mid = driver->stats();
  runAndCheck(Case(3, 9.0f));
  EXPECT_EQ(driver->stats().event_records, mid.event_records);
  EXPECT_EQ(driver->stats().graph_launches - mid.graph_launches, 1);
  // Timing launches drops the graph; without, a plain run and a capture
  // follow as for a new instance.
  ASSERT_EQ(take(kiln_instance_set_profiling(instance, KILN_PROFILE_KERNELS)),
            "");
  EXPECT_EQ(driver->stats().live_graph_execs, before.live_graph_execs);
  runAndCheck(Case(3, 10.0f));
  EXPECT_EQ(last().num_events, 2u);
  ASSERT_EQ(take(kiln_instance_set_profiling(instance, KILN_PROFILE_OFF)), "");
  mid = driver->stats();
  for (int i = 0; i < 3; ++i)
    runAndCheck(Case(3, 11.0f + i));
  EXPECT_EQ(driver->stats().captures - mid.captures, 1);
  EXPECT_EQ(driver->stats().graph_launches - mid.graph_launches, 2);
}

TEST_F(CudaTimingTest, EventFailuresStopTimingNotTheRun) {
  ASSERT_EQ(take(kiln_instance_set_profiling(
                instance, KILN_PROFILE_KERNELS | KILN_PROFILE_PHASES)),
            "");
  runAndCheck(Case(3, 1.0f));
  EXPECT_EQ(last().num_events, 2u);
  env.set("FAKE_CUDA_MODE", "eventfail");
  runAndCheck(Case(3, 2.0f));
  env.set("FAKE_CUDA_MODE", nullptr);
  runAndCheck(Case(3, 3.0f));
  kiln_run_profile_t p = last();
  EXPECT_EQ(p.num_events, 0u);
  EXPECT_EQ(p.h2d_us, -1);
  EXPECT_STREQ(p.stopped, "cuEventRecord failed: CUDA_ERROR_NOT_SUPPORTED "
                          "(operation not supported)");
}

TEST_F(CudaTimingTest, DeviceBuffersOnTheCallersStream) {
  // kiln_instance_run_device on the caller's stream returns with the work
  // done when phases are timed (the driver waits for the last mark).
  DeviceBuffers buffers{driver, {}};
  Case c(3, 1.0f);
  void *x = buffers.alloc(c.x.size() * 4);
  void *y = buffers.alloc(c.y.size() * 4);
  void *total = buffers.alloc(4);
  std::memcpy(x, c.x.data(), c.x.size() * 4);
  void *stream = driver->streamCreate();
  ASSERT_EQ(take(kiln_instance_set_stream(instance, stream)), "");
  ASSERT_EQ(take(kiln_instance_set_profiling(
                instance, KILN_PROFILE_KERNELS | KILN_PROFILE_PHASES)),
            "");
  kiln_tensor_view_t in = {KILN_DTYPE_F32, 2, c.xDims.data(), x};
  int64_t yDims[2] = {3, 4};
  kiln_output_view_t out[2] = {{KILN_DTYPE_F32, 2, yDims, y},
                               {KILN_DTYPE_F32, 0, nullptr, total}};
  ASSERT_EQ(take(kiln_instance_run_device(instance, &in, 1, out, 2)), "");
  expectFloats(y, c.y, "y");
  kiln_run_profile_t p = last();
  EXPECT_EQ(p.num_events, 2u);
  EXPECT_EQ(p.compute_us, 3000);
  ASSERT_EQ(take(kiln_instance_set_stream(instance, nullptr)), "");
  driver->streamDestroy(stream);
}

} // namespace
