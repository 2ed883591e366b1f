//===- CudaDeviceRunTest.cpp - Device buffers, tile maps, dynamic runs ----===//
//
// The fake cuda model and driver (see CudaRuntimeTest.cpp) run on the
// caller's device buffers (kiln_instance_run_device), with and without
// graphs, with tile maps (kiln_rt_tile_map) and with symbolic dims.
//
//===----------------------------------------------------------------------===//
#include "CudaTestSupport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using namespace kiln_test;

//===----------------------------------------------------------------------===//
// Tile maps (kiln_rt_tile_map: TMA descriptors of sm_90a kernels)
//===----------------------------------------------------------------------===//

class CudaTileMapTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_TILE_MAP_MODEL);
  }
  std::string runOnce() { return runStatus(Case(3, 1.0f)); }
};

TEST_F(CudaTileMapTest, EncodedThroughTheDriver) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  runAndCheck(Case(3, 1.0f));
  fake_cuda_stats s = driver->stats();
  EXPECT_EQ(s.tile_maps - before.tile_maps, 1);
  EXPECT_EQ(s.last_map_type, 7); // CU_TENSOR_MAP_DATA_TYPE_FLOAT32
  EXPECT_EQ(s.last_map_rank, 2);
  EXPECT_EQ(s.last_map_swizzle, 0);
  EXPECT_EQ(s.last_map_dims[0], 4u);
  EXPECT_EQ(s.last_map_dims[1], 3u);
  EXPECT_EQ(s.last_map_strides[0], 16u); // of dim 1; dim 0's is implied
  EXPECT_EQ(s.last_map_box[0] * 10 + s.last_map_box[1], 42u); // 4 x 2
}

TEST_F(CudaTileMapTest, DriverFailureFailsTheRun) {
  setenv("FAKE_CUDA_MODE", "tilemapfail", 1);
  std::string status = runOnce();
  unsetenv("FAKE_CUDA_MODE");
  EXPECT_NE(status.find("cuTensorMapEncodeTiled(rank 2, dtype 3, 4x2 box) "
                        "failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << status;
}

class CudaBadTileMapTest : public CudaTileMapTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_BAD_TILE_MAP_MODEL);
  }
};

TEST_F(CudaBadTileMapTest, BadArgumentsFailTheRun) {
  std::string status = runOnce();
  EXPECT_NE(status.find("kiln_rt_tile_map: bad arguments (rank 6, swizzle 0)"),
            std::string::npos)
      << status;
  EXPECT_EQ(driver->stats().tile_maps - before.tile_maps, 0);
}

/// Im2col maps (kiln_rt_im2col_map: sm_90a convolutions' activations).
class CudaIm2colMapTest : public CudaTileMapTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_IM2COL_MAP_MODEL);
  }
};

TEST_F(CudaIm2colMapTest, EncodedThroughTheDriver) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  runAndCheck(Case(3, 1.0f));
  fake_cuda_stats s = driver->stats();
  EXPECT_EQ(s.im2col_maps - before.im2col_maps, 1);
  EXPECT_EQ(s.tile_maps - before.tile_maps, 0);
  EXPECT_EQ(s.last_map_rank, 4);
  EXPECT_EQ(s.last_map_dims[0], 4u); // channels, then W, H, batch
  EXPECT_EQ(s.last_map_dims[2], 3u);
  EXPECT_EQ(s.last_map_strides[1], 16u); // of dim 2 (H)
  EXPECT_EQ(s.last_im2col_lower[1], -1);
  EXPECT_EQ(s.last_im2col_upper[1], -2);
  EXPECT_EQ(s.last_im2col_element_strides[2], 2u);
  EXPECT_EQ(s.last_im2col_channels, 4u);
  EXPECT_EQ(s.last_im2col_pixels, 2u);
}

TEST_F(CudaIm2colMapTest, DriverFailureFailsTheRun) {
  setenv("FAKE_CUDA_MODE", "tilemapfail", 1);
  std::string status = runOnce();
  unsetenv("FAKE_CUDA_MODE");
  EXPECT_NE(status.find("cuTensorMapEncodeIm2col(rank 4, dtype 3, 2 pixels x "
                        "4) failed: CUDA_ERROR_INVALID_VALUE"),
            std::string::npos)
      << status;
}

class CudaBadIm2colMapTest : public CudaTileMapTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_BAD_IM2COL_MAP_MODEL);
  }
};

TEST_F(CudaBadIm2colMapTest, BadRankFailsTheRun) {
  std::string status = runOnce();
  EXPECT_NE(
      status.find("kiln_rt_im2col_map: bad arguments (rank 2, swizzle 0)"),
      std::string::npos)
      << status;
  EXPECT_EQ(driver->stats().im2col_maps - before.im2col_maps, 0);
}

//===----------------------------------------------------------------------===//
// A model with symbolic dims and a device read (not graph-capturable)
//===----------------------------------------------------------------------===//

class CudaDynamicRunTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_DYNAMIC_MODEL);
  }
};

TEST_F(CudaDynamicRunTest, ReadsDeviceResults) {
  for (int64_t n : {2, 5, 0, 5, 1}) {
    Case c(n, n == 1 ? -10.0f : 1.0f);
    runAndCheck(c);
    if (HasFatalFailure())
      return;
  }
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.capture_attempts, 0);
  EXPECT_EQ(d.function_lookups, 4);
  EXPECT_EQ(d.bad_pointers, 0);
}

//===----------------------------------------------------------------------===//
// Graphs per input shape: a graph-capturable model with a symbolic dim gets
// a graph for each N (captured on its second run, replayed after), up to
// KILN_GRAPH_CACHE of them; the scratch buffer each graph's kernels use
// stays allocated while the graph lives.
//===----------------------------------------------------------------------===//

class CudaShapeGraphTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_SYMBOLIC_MODEL);
  }
};

TEST_F(CudaShapeGraphTest, OneGraphPerShape) {
  // Two shapes interleaved: each warms up, is captured, then replays.
  for (int64_t n : {3, 5, 3, 5, 3, 5, 3, 5}) {
    runAndCheck(Case(n, float(n)));
    if (HasFatalFailure())
      return;
  }
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.captures, 2);
  EXPECT_EQ(d.graph_launches, 6); // runs 3 to 8: two captured, four replayed
  EXPECT_EQ(d.launches, 8);       // the kernels of the two plain runs and
                                  // the two captures (2 each)
  EXPECT_EQ(d.bad_pointers, 0);
  // The first shape's graph again after another shape: still replayed.
  runAndCheck(Case(3, 7.0f));
  EXPECT_EQ(delta().graph_launches, 7);
  EXPECT_EQ(delta().captures, 2);
}

TEST_F(CudaShapeGraphTest, BoundedCache) {
  // KILN_GRAPH_CACHE (8) shapes fit; a ninth drops the least recently run.
  for (int round = 0; round < 2; ++round)
    for (int64_t n = 1; n <= 8; ++n) {
      runAndCheck(Case(n, 1.0f));
      if (HasFatalFailure())
        return;
    }
  EXPECT_EQ(delta().captures, 8);
  for (int64_t n = 1; n <= 8; ++n)
    runAndCheck(Case(n, 2.0f));
  EXPECT_EQ(delta().captures, 8);
  EXPECT_EQ(delta().graph_launches, 16);
  // N = 9 warms up (dropping N = 1's graph), then is captured.
  runAndCheck(Case(9, 1.0f));
  runAndCheck(Case(9, 1.0f));
  EXPECT_EQ(delta().captures, 9);
  EXPECT_EQ(driver->stats().live_graph_execs - before.live_graph_execs, 8);
  // N = 1 again: a plain run (its graph went), then a new capture.
  runAndCheck(Case(1, 3.0f));
  runAndCheck(Case(1, 3.0f));
  EXPECT_EQ(delta().captures, 10);
  EXPECT_EQ(delta().bad_pointers, 0);
}

TEST_F(CudaShapeGraphTest, GraphsOffRunsPlainly) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  for (int64_t n : {3, 3, 4, 4})
    runAndCheck(Case(n, 1.0f));
  EXPECT_EQ(delta().capture_attempts, 0);
}

//===----------------------------------------------------------------------===//
// Scratch released within a run (kiln_rt_release): a later allocation of
// the run gets the same memory (the model checks it), with and without
// graphs; the scratch is allocated once for all runs.
//===----------------------------------------------------------------------===//

class CudaReleaseTest : public CudaRunTest {
protected:
  /// Releases the fixture's model and loads `path` instead.
  void reload(const char *path) {
    kiln_instance_release(instance);
    kiln_model_release(model);
    instance = nullptr;
    model = nullptr;
    expectAllReleased();
    before = driver->stats();
    load(path);
  }
};

TEST_F(CudaReleaseTest, ReleasedScratchIsReused) {
  for (int i = 0; i < 4; ++i)
    runAndCheck(Case(3, 1.0f));
  fake_cuda_stats plain = delta();
  reload(KILN_TEST_CUDA_RELEASE_MODEL);
  for (int i = 0; i < 4; ++i) {
    runAndCheck(Case(3, float(i)));
    if (HasFatalFailure())
      return;
  }
  fake_cuda_stats d = delta();
  // Warm-up, capture, two replays; the capture took the released buffer's
  // memory again without an allocation (else it is abandoned).
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.graph_launches, 3);
  EXPECT_EQ(d.kernel_runs, 4 * 4);
  EXPECT_EQ(d.bad_pointers, 0);
  // As many device allocations as the model without the second buffer.
  EXPECT_EQ(d.allocs, plain.allocs);
}

TEST_F(CudaReleaseTest, ReleasingTwiceFailsTheRun) {
  reload(KILN_TEST_CUDA_DOUBLE_RELEASE_MODEL);
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  std::string status = runStatus(Case(3, 1.0f));
  EXPECT_NE(status.find("kiln_rt_release: "), std::string::npos) << status;
  EXPECT_NE(status.find("is not a device scratch buffer held by this run"),
            std::string::npos)
      << status;
  // The instance still runs into the same error, and nothing leaks.
  status = runStatus(Case(3, 1.0f));
  EXPECT_NE(status.find("kiln_rt_release: "), std::string::npos) << status;
}

//===----------------------------------------------------------------------===//
// Device checks (kiln_rt_check_record): the record kernels write, read once
// the run has synchronized
//===----------------------------------------------------------------------===//

class CudaCheckRunTest : public CudaRunTest {
protected:
  void SetUp() override {
    CudaFakeDriverTest::SetUp();
    if (HasFatalFailure())
      return;
    load(KILN_TEST_CUDA_CHECK_MODEL);
  }
  std::string runOnce(float seed) {
    Case c(3, seed);
    std::vector<kiln_tensor_view_t> in = c.views();
    std::vector<kiln_tensor_t *> out(2, nullptr);
    kiln_status_t *raw =
        kiln_instance_run(instance, in.data(), in.size(), out.data(), 2);
    code = raw ? kiln_status_code(raw) : KILN_STATUS_OK;
    std::string status = take(raw);
    if (status.empty() && out[0])
      expectFloats(kiln_tensor_data(out[0]), c.y, "y");
    for (kiln_tensor_t *t : out)
      kiln_tensor_release(t);
    return status;
  }
  kiln_status_code_t code = KILN_STATUS_OK;
};

TEST_F(CudaCheckRunTest, FailedCheckFailsTheRunOnce) {
  for (int graphs : {0, 1}) {
    SCOPED_TRACE(graphs ? "graphs" : "plain runs");
    ASSERT_EQ(take(kiln_instance_set_graphs(instance, graphs)), "");
    // Plain, captured, replayed: each run that breaks the check fails with
    // its message and values; the runs after it pass again.
    for (int run = 0; run < 5; ++run) {
      bool bad = run == 3 || run == 1;
      std::string status = runOnce(bad ? 600.0f : 1.0f);
      if (!bad) {
        EXPECT_EQ(status, "") << "run " << run;
        continue;
      }
      // Case(3, 600): x[0, 1] = 600 - 3 + 0.25, y = 2x - 1 (the first above
      // 1000 in row-major order).
      EXPECT_EQ(code, KILN_STATUS_INVALID_ARGUMENT) << status;
      EXPECT_NE(status.find("model run failed: node 'big' (Check, opset 1): "
                            "y[0, 1] is 1193, above 1000"),
                std::string::npos)
          << status;
    }
  }
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.host_allocs, 1); // one record per instance, kept
  EXPECT_EQ(d.bad_pointers, 0);
  EXPECT_GE(d.graph_launches, 1); // the checks ran inside replays too
}

// On the caller's stream with device buffers the run returns before its
// work is known to be done, so it cannot report its device checks; the next
// run of the instance does, naming it an earlier run's.
TEST_F(CudaCheckRunTest, CallerStreamReportsAtTheNextRun) {
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  void *stream = driver->streamCreate();
  ASSERT_EQ(take(kiln_instance_set_stream(instance, stream)), "");
  DeviceBuffers mem{driver, {}};
  char *x = static_cast<char *>(mem.alloc(3 * 4 * 4));
  char *y = static_cast<char *>(mem.alloc(3 * 4 * 4));
  char *total = static_cast<char *>(mem.alloc(64));
  auto runDevice = [&](float seed) {
    Case c(3, seed);
    std::memcpy(x, c.x.data(), c.x.size() * 4);
    int64_t yDims[] = {3, 4};
    kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), x}};
    kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, y},
                                {KILN_DTYPE_F32, 0, nullptr, total}};
    return take(kiln_instance_run_device(instance, in, 1, out, 2));
  };
  EXPECT_EQ(runDevice(600.0f), ""); // the failure is not known yet
  std::string next = runDevice(1.0f);
  EXPECT_NE(next.find("a device check failed in an earlier run on the "
                      "caller's stream: node 'big' (Check, opset 1): "
                      "y[0, 1] is 1193, above 1000"),
            std::string::npos)
      << next;
  EXPECT_EQ(runDevice(1.0f), ""); // reported once
  ASSERT_EQ(take(kiln_instance_set_stream(instance, nullptr)), "");
  driver->streamDestroy(stream);
}

//===----------------------------------------------------------------------===//
// Device buffers (kiln_instance_run_device)
//===----------------------------------------------------------------------===//

/// Device buffers from the fake driver, freed at the end of the test.

TEST_F(CudaRunTest, RunDevice) {
  for (int graphs : {0, 1}) {
    ASSERT_EQ(take(kiln_instance_set_graphs(instance, graphs)), "");
    DeviceBuffers mem{driver, {}};
    char *x = static_cast<char *>(mem.alloc(3 * 4 * 4 + 64));
    char *y = static_cast<char *>(mem.alloc(3 * 4 * 4 + 64));
    char *total = static_cast<char *>(mem.alloc(64));
    for (int run = 0; run < 4; ++run) {
      Case c(3, static_cast<float>(run + 10 * graphs));
      // Run 3 uses buffers not aligned to 64 bytes: the runtime stages them.
      size_t shift = run == 3 ? 4 : 0;
      std::memcpy(x + shift, c.x.data(), c.x.size() * 4);
      int64_t yDims[] = {3, 4};
      kiln_tensor_view_t in[] = {
          {KILN_DTYPE_F32, 2, c.xDims.data(), x + shift}};
      kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, y + shift},
                                  {KILN_DTYPE_F32, 0, nullptr, total}};
      fake_cuda_stats s = driver->stats();
      ASSERT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)), "")
          << "graphs " << graphs << " run " << run;
      fake_cuda_stats t = driver->stats();
      expectFloats(y + shift, c.y, "y");
      EXPECT_EQ(*reinterpret_cast<float *>(total), c.total);
      EXPECT_EQ(t.htod - s.htod, run == 0 && graphs == 0 ? 1 : 0); // weight
      EXPECT_EQ(t.dtoh, s.dtoh);
      // In place, except the input and the output that are not 64-byte
      // aligned in run 3 (staged: a copy each); the model's own device copy
      // is issued by plain runs and the capture (run 1) and replayed by the
      // graph (run 2).
      int64_t dtod = run == 3 ? 3 : graphs && run == 2 ? 0 : 1;
      EXPECT_EQ(t.dtod - s.dtod, dtod) << "graphs " << graphs << " run " << run;
      EXPECT_EQ(t.bad_pointers, s.bad_pointers);
    }
  }
  fake_cuda_stats d = delta();
  EXPECT_EQ(d.captures, 1);
  EXPECT_EQ(d.graph_launches, 2); // run 3's buffers moved: a plain run
}

// Graphs on the caller's buffers: replays while they stay, a new capture
// when they move, and staging once they have moved twice.
TEST_F(CudaRunTest, RunDeviceGraphFollowsMovedBuffers) {
  DeviceBuffers mem{driver, {}};
  struct Buffers {
    void *x, *y, *total;
  } sets[2];
  for (Buffers &b : sets)
    b = {mem.alloc(64), mem.alloc(64), mem.alloc(64)};
  // run: 0 plain, 1 capture, 2 replay | B moved: 3 plain, 4 capture |
  // A moved again: staged from now on: 5 plain, 6 capture, 7 and 8 replay.
  const int which[] = {0, 0, 0, 1, 1, 0, 0, 1, 0};
  const int64_t wantDtod[] = {1, 1, 0, 1, 1, 4, 4, 3, 3};
  const int64_t wantGraphLaunches[] = {0, 1, 1, 0, 1, 0, 1, 1, 1};
  for (int run = 0; run < 9; ++run) {
    const Buffers &b = sets[which[run]];
    Case c(3, static_cast<float>(run));
    std::memcpy(b.x, c.x.data(), c.x.size() * 4);
    int64_t yDims[] = {3, 4};
    kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), b.x}};
    kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, b.y},
                                {KILN_DTYPE_F32, 0, nullptr, b.total}};
    fake_cuda_stats s = driver->stats();
    ASSERT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)), "")
        << "run " << run;
    fake_cuda_stats t = driver->stats();
    expectFloats(b.y, c.y, "y");
    EXPECT_EQ(*static_cast<float *>(b.total), c.total) << "run " << run;
    // Staged runs copy the input in and both outputs out.
    EXPECT_EQ(t.dtod - s.dtod, wantDtod[run]) << "run " << run;
    EXPECT_EQ(t.graph_launches - s.graph_launches, wantGraphLaunches[run])
        << "run " << run;
    EXPECT_EQ(t.kernel_runs - s.kernel_runs, 2) << "run " << run;
    EXPECT_EQ(t.bad_pointers, s.bad_pointers);
  }
  EXPECT_EQ(delta().captures, 3);
  // Host tensors after that: staged, so the staged graph still fits.
  runAndCheck(Case(3, 42.0f));
  EXPECT_EQ(delta().captures, 3);
  // Turning graphs off and on again forgets the moves.
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 0)), "");
  ASSERT_EQ(take(kiln_instance_set_graphs(instance, 1)), "");
  fake_cuda_stats s = driver->stats();
  for (int run = 0; run < 3; ++run) {
    Case c(3, static_cast<float>(run));
    std::memcpy(sets[0].x, c.x.data(), c.x.size() * 4);
    int64_t yDims[] = {3, 4};
    kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), sets[0].x}};
    kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, sets[0].y},
                                {KILN_DTYPE_F32, 0, nullptr, sets[0].total}};
    ASSERT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)), "");
    expectFloats(sets[0].y, c.y, "y");
  }
  fake_cuda_stats t = driver->stats();
  EXPECT_EQ(t.dtod - s.dtod, 2); // in place again: only the model's copy
  EXPECT_EQ(t.graph_launches - s.graph_launches, 2);
}

TEST_F(CudaRunTest, RunDeviceChecksOutputs) {
  DeviceBuffers mem{driver, {}};
  void *x = mem.alloc(64), *y = mem.alloc(64), *total = mem.alloc(64);
  Case c(3, 1.0f);
  int64_t badDims[] = {2, 4}, yDims[] = {3, 4};
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), x}};
  kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, badDims, y},
                              {KILN_DTYPE_F32, 0, nullptr, total}};
  kiln_status_t *status = kiln_instance_run_device(instance, in, 1, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(status), "output 0 ('y'): dimension 0 is 2, expected 3");
  out[0].dims = yDims;
  out[1].dtype = KILN_DTYPE_I32;
  EXPECT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)),
            "output 1 ('total'): dtype is i32, expected f32");
  out[1].dtype = KILN_DTYPE_F32;
  out[1].data = nullptr;
  EXPECT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 2)),
            "output 1 ('total'): data is NULL");
  EXPECT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 1)),
            "expected 2 outputs, got 1");
  EXPECT_EQ(take(kiln_instance_run_device(instance, in, 1, nullptr, 2)),
            "outputs is NULL");
  EXPECT_EQ(delta().launch_attempts, 0);
}

TEST_F(CudaDynamicRunTest, RunDeviceDataDependentShape) {
  DeviceBuffers mem{driver, {}};
  Case c(2, 1.0f);
  ASSERT_EQ(c.pos.size(), 4u);
  void *x = mem.alloc(64), *y = mem.alloc(64), *total = mem.alloc(64),
       *pos = mem.alloc(64);
  std::memcpy(x, c.x.data(), c.x.size() * 4);
  int64_t yDims[] = {3, 4}, posDims[] = {1};
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, c.xDims.data(), x}};
  kiln_output_view_t out[] = {{KILN_DTYPE_F32, 2, yDims, y},
                              {KILN_DTYPE_F32, 0, nullptr, total},
                              {KILN_DTYPE_F32, 1, posDims, pos}};
  // y's first dim is the symbol N, which the input binds to 2.
  EXPECT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 3)),
            "output 0 ('y'): dimension 0 is 3, expected 2");
  yDims[0] = 2;
  kiln_status_t *status = kiln_instance_run_device(instance, in, 1, out, 3);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(take(status), "model run failed: output 2 ('pos'): the model "
                          "produced dimensions [4], the output buffer has "
                          "[1]");
  posDims[0] = 4;
  ASSERT_EQ(take(kiln_instance_run_device(instance, in, 1, out, 3)), "");
  expectFloats(y, c.y, "y");
  expectFloats(pos, c.pos, "pos");
  EXPECT_EQ(*static_cast<float *>(total), c.total);
}

TEST(CudaCpuModelTest, DeviceCallsOnACpuModel) {
  kiln_model_t *model = nullptr;
  ASSERT_EQ(take(kiln_model_load(KILN_TEST_FAKE_MODEL, &model)), "");
  kiln_instance_t *instance = nullptr;
  ASSERT_EQ(take(kiln_instance_create(model, &instance)), "");
  int64_t dims[] = {1, 4};
  float data[4] = {};
  kiln_tensor_view_t in[] = {{KILN_DTYPE_F32, 2, dims, data},
                             {KILN_DTYPE_F32, 1, dims, data}};
  kiln_output_view_t out[2] = {};
  kiln_status_t *status = kiln_instance_run_device(instance, in, 2, out, 2);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(take(status), "kiln_instance_run_device: the model runs on the "
                          "cpu, not on a device; use kiln_instance_run");
  status = kiln_instance_set_stream(instance, nullptr);
  EXPECT_EQ(kiln_status_code(status), KILN_STATUS_FAILED_PRECONDITION);
  EXPECT_EQ(take(status), "kiln_instance_set_stream: the model runs on "
                          "the cpu, not on a device");
  EXPECT_EQ(take(kiln_instance_set_graphs(instance, 0)),
            "kiln_instance_set_graphs: the model runs on the cpu, not on "
            "a device");
  EXPECT_EQ(take(kiln_instance_run_device(nullptr, in, 2, out, 2)),
            "instance is NULL");
  kiln_instance_release(instance);
  kiln_model_release(model);
}

} // namespace
