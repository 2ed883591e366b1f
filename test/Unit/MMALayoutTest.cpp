//===- MMALayoutTest.cpp - AMD matrix-instruction layouts, emulated -------===//
//
// The fragment layouts Kiln assumes for MFMA 16x16x16 (gfx9, waves of 64)
// and WMMA 16x16x16 (gfx11, waves of 32) (getAMDGPUMMALayout, the
// MMALayout that kiln-map-kernels-to-gpu distributes operands and reads
// results with) against the lane maps of AMD's published tables, written out
// here independently of the layout code:
//
// - v_mfma_f32_16x16x16_f16 (AMD Instinct MI300 "CDNA3" ISA, section 7.1,
//   and AMD's matrix instruction calculator): A[i][k] in lane i + 16 (k / 4),
//   element k % 4; B[k][j] in lane j + 16 (k / 4), element k % 4; C/D[i][j]
//   in lane j + 16 (i / 4), register i % 4.
// - v_mfma_f32_16x16x4f32 (the same sources): A[i][k] in lane i + 16 k,
//   B[k][j] in lane j + 16 k, one element each; C/D as above.
// - v_wmma_f32_16x16x16_f16 ("RDNA3" ISA, section 7.9): A[i][k] in lanes i
//   and i + 16 (both must hold it), element k; B[k][j] in lanes j and j + 16,
//   element k; C/D[i][j] in lane j + 16 (i % 2), register i / 2.
//
// One fragment multiply is emulated on the CPU: Kiln's layout places A, B
// and C in the lanes' registers, the instruction (per the table) computes D
// from the registers it reads, Kiln's layout reads D back, and the result
// must be A x B + C exactly (small integers); every register of a lane is
// used once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <vector>

using namespace mlir;
using namespace mlir::kiln;

namespace {
/// A lane's registers: its A and B operand elements, its C/D accumulators.
struct Lane {
  std::vector<double> a, b, c;
};
/// (lane, element or register) of a matrix element.
struct Slot {
  int lane, index;
};
/// The table's lane maps of one instruction.
struct Table {
  int waveSize;
  /// Where the instruction reads A[i][k] (every copy) and B[k][j], and
  /// where C/D[i][j] lives.
  std::function<std::vector<Slot>(int, int)> a, b;
  std::function<Slot(int, int)> cd;
};

int64_t coord(const LaneCoord &c, int64_t lane, int64_t groupSize) {
  return c.group * (lane / groupSize) + c.thread * (lane % groupSize);
}

/// Emulates D = A x B + C with `layout` distributing the operands and
/// `table` standing for the hardware; returns the D that Kiln reads back.
std::vector<double> emulate(const MMALayout &l, const Table &t,
                            const std::vector<double> &A,
                            const std::vector<double> &B,
                            const std::vector<double> &C) {
  const int M = l.m, N = l.n, K = l.k;
  std::vector<Lane> lanes(t.waveSize);
  std::vector<int> cUse(M * N, 0);
  for (int lane = 0; lane < t.waveSize; ++lane) {
    Lane &r = lanes[lane];
    for (const FragmentOffset &reg : l.aRegs)
      for (int e = 0; e < l.kPack; ++e) {
        int64_t i = coord(l.aRow, lane, l.groupSize) + reg.outer;
        int64_t k = coord(l.aK, lane, l.groupSize) + reg.inner + e;
        EXPECT_LT(i, M);
        EXPECT_LT(k, K);
        r.a.push_back(A[i * K + k]);
      }
    for (const FragmentOffset &reg : l.bRegs)
      for (int e = 0; e < l.kPack; ++e) {
        int64_t j = coord(l.bCol, lane, l.groupSize) + reg.outer;
        int64_t k = coord(l.bK, lane, l.groupSize) + reg.inner + e;
        EXPECT_LT(j, N);
        EXPECT_LT(k, K);
        r.b.push_back(B[k * N + j]);
      }
    for (const FragmentOffset &e : l.cElems) {
      int64_t i = coord(l.cRow, lane, l.groupSize) + e.outer;
      int64_t j = coord(l.cCol, lane, l.groupSize) + e.inner;
      EXPECT_LT(i, M);
      EXPECT_LT(j, N);
      ++cUse[i * N + j];
      r.c.push_back(C[i * N + j]);
    }
  }
  // Kiln's C layout gives each element of C to exactly one accumulator.
  for (int x = 0; x < M * N; ++x)
    EXPECT_EQ(cUse[x], 1) << "C element " << x / N << "," << x % N;

  // The instruction, as the table says it reads and writes registers.
  std::vector<double> D(M * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      Slot c = t.cd(i, j);
      double sum = lanes[c.lane].c.at(c.index);
      for (int k = 0; k < K; ++k) {
        std::vector<Slot> as = t.a(i, k), bs = t.b(k, j);
        double a = lanes[as[0].lane].a.at(as[0].index);
        double b = lanes[bs[0].lane].b.at(bs[0].index);
        // Replicated operands must agree in every copy.
        for (const Slot &s : as)
          EXPECT_EQ(lanes[s.lane].a.at(s.index), a) << "A " << i << "," << k;
        for (const Slot &s : bs)
          EXPECT_EQ(lanes[s.lane].b.at(s.index), b) << "B " << k << "," << j;
        sum += a * b;
      }
      D[i * N + j] = sum;
    }
  // Kiln reads each accumulator back where its layout says it is.
  std::vector<double> out(M * N);
  for (int lane = 0; lane < t.waveSize; ++lane)
    for (size_t e = 0; e < l.cElems.size(); ++e) {
      int64_t i = coord(l.cRow, lane, l.groupSize) + l.cElems[e].outer;
      int64_t j = coord(l.cCol, lane, l.groupSize) + l.cElems[e].inner;
      Slot s = t.cd(i, j);
      EXPECT_EQ(s.lane, lane) << "D " << i << "," << j;
      EXPECT_EQ(s.index, (int)e) << "D " << i << "," << j;
      out[i * N + j] = D[i * N + j];
    }
  return out;
}

void check(const MMALayout &l, const Table &t, int64_t k) {
  ASSERT_EQ(l.m, 16);
  ASSERT_EQ(l.n, 16);
  ASSERT_EQ(l.k, k);
  const int K = k;
  // One accumulator per element of C over the wave.
  EXPECT_EQ((int64_t)l.cElems.size() * t.waveSize, 16 * 16);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<double> A(16 * K), B(K * 16), C(256);
  for (std::vector<double> *m : {&A, &B, &C})
    for (double &x : *m)
      x = small(rng);
  std::vector<double> D = emulate(l, t, A, B, C);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) {
      double ref = C[i * 16 + j];
      for (int kk = 0; kk < K; ++kk)
        ref += A[i * K + kk] * B[kk * 16 + j];
      EXPECT_EQ(D[i * 16 + j], ref) << "D " << i << "," << j;
    }
}

Table mfmaTable() {
  Table t;
  t.waveSize = 64;
  t.a = [](int i, int k) {
    return std::vector<Slot>{{i + 16 * (k / 4), k % 4}};
  };
  t.b = [](int k, int j) {
    return std::vector<Slot>{{j + 16 * (k / 4), k % 4}};
  };
  t.cd = [](int i, int j) { return Slot{j + 16 * (i / 4), i % 4}; };
  return t;
}

/// v_mfma_f32_16x16x4f32 (one block): A[i][k] in lane i + 16 k, B[k][j] in
/// lane j + 16 k (one element each); C/D as in the f16 form.
Table mfmaF32Table() {
  Table t;
  t.waveSize = 64;
  t.a = [](int i, int k) { return std::vector<Slot>{{i + 16 * k, 0}}; };
  t.b = [](int k, int j) { return std::vector<Slot>{{j + 16 * k, 0}}; };
  t.cd = [](int i, int j) { return Slot{j + 16 * (i / 4), i % 4}; };
  return t;
}

Table wmmaTable() {
  Table t;
  t.waveSize = 32;
  t.a = [](int i, int k) { return std::vector<Slot>{{i, k}, {i + 16, k}}; };
  t.b = [](int k, int j) { return std::vector<Slot>{{j, k}, {j + 16, k}}; };
  t.cd = [](int i, int j) { return Slot{j + 16 * (i % 2), i / 2}; };
  return t;
}

class AMDGPUMMALayout : public ::testing::Test {
protected:
  MLIRContext context;
  Builder b{&context};
};
} // namespace

TEST_F(AMDGPUMMALayout, MFMA16x16x16F16) {
  check(getAMDGPUMMALayout(/*wmma=*/false, b.getF16Type(), b.getF32Type()),
        mfmaTable(), 16);
}

TEST_F(AMDGPUMMALayout, MFMA16x16x16BF16) {
  // The bf16 forms (v_mfma_f32_16x16x16_bf16, gfx90a's _bf16_1k) share the
  // f16 one's lanes.
  check(getAMDGPUMMALayout(false, b.getBF16Type(), b.getF32Type()), mfmaTable(),
        16);
}

TEST_F(AMDGPUMMALayout, MFMA16x16x4F32) {
  check(getAMDGPUMMALayout(false, b.getF32Type(), b.getF32Type()),
        mfmaF32Table(), 4);
}

TEST_F(AMDGPUMMALayout, WMMA16x16x16F16) {
  check(getAMDGPUMMALayout(/*wmma=*/true, b.getF16Type(), b.getF32Type()),
        wmmaTable(), 16);
}

TEST_F(AMDGPUMMALayout, WrongTableFails) {
  // The check can fail: the MFMA layout against the WMMA table disagrees.
  // (Run in a death-free way: count the mismatching D elements directly.)
  MMALayout l = getAMDGPUMMALayout(false, b.getF16Type(), b.getF32Type());
  Table t = mfmaTable();
  // The transposed C map (C[i][j] in lane i + 16 (j / 4)) is what the
  // layout must not match.
  t.cd = [](int i, int j) { return Slot{i + 16 * (j / 4), j % 4}; };
  int mismatches = 0;
  for (int lane = 0; lane < 64; ++lane)
    for (size_t e = 0; e < l.cElems.size(); ++e) {
      int64_t i = coord(l.cRow, lane, l.groupSize) + l.cElems[e].outer;
      int64_t j = coord(l.cCol, lane, l.groupSize) + l.cElems[e].inner;
      Slot s = t.cd(i, j);
      mismatches += s.lane != lane || s.index != (int)e;
    }
  EXPECT_GT(mismatches, 0);
}

TEST_F(AMDGPUMMALayout, ChipTable) {
  const RocmChip *gfx942 = lookupRocmChip("gfx942");
  const RocmChip *gfx1100 = lookupRocmChip("gfx1100");
  ASSERT_TRUE(gfx942 && gfx1100);
  EXPECT_EQ(gfx942->waveSize, 64);
  EXPECT_EQ(gfx942->matrix, RocmChip::Matrix::MFMA);
  EXPECT_EQ(gfx1100->waveSize, 32);
  EXPECT_EQ(gfx1100->matrix, RocmChip::Matrix::WMMA);
  EXPECT_EQ(lookupRocmChip("gfx940"), nullptr);
}
