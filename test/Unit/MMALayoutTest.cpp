//===- MMALayoutTest.cpp - Matrix-instruction layouts, emulated -----------===//
//
// The fragment layouts Kiln assumes for MFMA 16x16x16 (gfx9, waves of 64)
// and WMMA 16x16x16 (gfx11, waves of 32) (getAMDGPUMMALayout), and for
// NVIDIA's mma.sync m16n8k16 (f16/bf16) and m16n8k8 (tf32) (the NVPTX
// target-info's getMMA and getTF32MMA): the MMALayout that
// kiln-map-kernels-to-gpu distributes operands and reads results with,
// against the lane maps of the vendors' published tables, written out here
// independently of the layout code:
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
// - mma.m16n8k16 .f16/.bf16 (PTX ISA, "Matrix Fragments for mma.m16n8k16
//   with floating point type"; groupID = lane / 4, threadID_in_group =
//   lane % 4): A[i][k] in lane 4 (i % 8) + (k % 8) / 2, element
//   k % 2 + 2 (i / 8) + 4 (k / 8); B[k][j] in lane 4 j + (k % 8) / 2,
//   element k % 2 + 2 (k / 8); C/D[i][j] in lane 4 (i % 8) + j / 2,
//   element j % 2 + 2 (i / 8).
// - mma.m16n8k8 .tf32 (PTX ISA, "Matrix Fragments for mma.m16n8k8",
//   .tf32): A[i][k] in lane 4 (i % 8) + k % 4, element i / 8 + 2 (k / 4);
//   B[k][j] in lane 4 j + k % 4, element k / 4; C/D as for m16n8k16.
//
// One fragment multiply is emulated on the CPU: Kiln's layout places A, B
// and C in the lanes' registers, the instruction (per the table) computes D
// from the registers it reads, Kiln's layout reads D back, and the result
// must be A x B + C exactly (small integers); every register of a lane is
// used once.
//
//===----------------------------------------------------------------------===//

#include "kiln/Target/AMDGPU/AMDGPUTarget.h"
#include "kiln/Target/GPU/TargetInfo.h"
#include "kiln/Target/NVPTX/NVPTXTarget.h"

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

void check(const MMALayout &l, const Table &t, int64_t m, int64_t n,
           int64_t k) {
  ASSERT_EQ(l.m, m);
  ASSERT_EQ(l.n, n);
  ASSERT_EQ(l.k, k);
  const int M = m, N = n, K = k;
  // One accumulator per element of C over the wave.
  EXPECT_EQ((int64_t)l.cElems.size() * t.waveSize, M * N);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> small(-4, 4);
  std::vector<double> A(M * K), B(K * N), C(M * N);
  for (std::vector<double> *x : {&A, &B, &C})
    for (double &v : *x)
      v = small(rng);
  std::vector<double> D = emulate(l, t, A, B, C);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = C[i * N + j];
      for (int kk = 0; kk < K; ++kk)
        ref += A[i * K + kk] * B[kk * N + j];
      EXPECT_EQ(D[i * N + j], ref) << "D " << i << "," << j;
    }
}

void check(const MMALayout &l, const Table &t, int64_t k) {
  check(l, t, 16, 16, k);
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

/// mma.m16n8k16 .f16/.bf16: 4 A registers of 2 elements (8 per lane), 2 B
/// registers (4), 4 accumulators.
Table mmaM16N8K16Table() {
  Table t;
  t.waveSize = 32;
  t.a = [](int i, int k) {
    return std::vector<Slot>{
        {4 * (i % 8) + (k % 8) / 2, k % 2 + 2 * (i / 8) + 4 * (k / 8)}};
  };
  t.b = [](int k, int j) {
    return std::vector<Slot>{{4 * j + (k % 8) / 2, k % 2 + 2 * (k / 8)}};
  };
  t.cd = [](int i, int j) {
    return Slot{4 * (i % 8) + j / 2, j % 2 + 2 * (i / 8)};
  };
  return t;
}

/// mma.m16n8k8 .tf32: 4 A registers and 2 B registers of one element each,
/// 4 accumulators.
Table mmaM16N8K8TF32Table() {
  Table t = mmaM16N8K16Table();
  t.a = [](int i, int k) {
    return std::vector<Slot>{{4 * (i % 8) + k % 4, i / 8 + 2 * (k / 4)}};
  };
  t.b = [](int k, int j) { return std::vector<Slot>{{4 * j + k % 4, k / 4}}; };
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

class NVPTXMMALayout : public ::testing::Test {
protected:
  MLIRContext context;
  Builder b{&context};
  std::shared_ptr<const GPUTargetInfo> sm80 = createNVPTXTargetInfo("sm_80");
};

TEST_F(NVPTXMMALayout, MmaM16N8K16F16) {
  ASSERT_TRUE(sm80);
  std::optional<MMALayout> l = sm80->getMMA(b.getF16Type(), b.getF32Type());
  ASSERT_TRUE(l);
  EXPECT_FALSE(l->tf32);
  check(*l, mmaM16N8K16Table(), 16, 8, 16);
}

TEST_F(NVPTXMMALayout, MmaM16N8K16BF16) {
  ASSERT_TRUE(sm80);
  std::optional<MMALayout> l = sm80->getMMA(b.getBF16Type(), b.getF32Type());
  ASSERT_TRUE(l);
  check(*l, mmaM16N8K16Table(), 16, 8, 16);
}

TEST_F(NVPTXMMALayout, MmaM16N8K8TF32) {
  ASSERT_TRUE(sm80);
  std::optional<MMALayout> l = sm80->getTF32MMA(b.getF32Type());
  ASSERT_TRUE(l);
  EXPECT_TRUE(l->tf32);
  EXPECT_TRUE(l->operand.isF32());
  EXPECT_EQ(l->kPack, 1);
  check(*l, mmaM16N8K8TF32Table(), 16, 8, 8);
}

TEST_F(NVPTXMMALayout, ExactF32HasNoInstruction) {
  // f32 without the TF32 mark stays off the tensor cores (NVIDIA has no
  // f32 mma.sync), and chips before sm_80 have no TF32 one.
  ASSERT_TRUE(sm80);
  EXPECT_FALSE(sm80->getMMA(b.getF32Type(), b.getF32Type()));
  std::shared_ptr<const GPUTargetInfo> sm75 = createNVPTXTargetInfo("sm_75");
  ASSERT_TRUE(sm75);
  EXPECT_FALSE(sm75->getTF32MMA(b.getF32Type()));
}

TEST_F(NVPTXMMALayout, WrongTableFails) {
  // The check can fail: the tf32 layout against the f16 table's A map.
  std::optional<MMALayout> l = sm80->getTF32MMA(b.getF32Type());
  ASSERT_TRUE(l);
  Table t = mmaM16N8K16Table();
  int mismatches = 0;
  for (int lane = 0; lane < 32; ++lane)
    for (size_t r = 0; r < l->aRegs.size(); ++r) {
      int64_t i = coord(l->aRow, lane, l->groupSize) + l->aRegs[r].outer;
      int64_t k = coord(l->aK, lane, l->groupSize) + l->aRegs[r].inner;
      Slot s = t.a(i, k).front();
      mismatches += s.lane != lane || s.index != (int)r;
    }
  EXPECT_GT(mismatches, 0);
}
