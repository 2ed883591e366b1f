//===- KernelAllocTest.cpp - The cache behind CPU kernels' own buffers ----===//
//
// lib/Runtime/Model/KernelAlloc.c defines MLIR's generic allocation
// functions for the buffers CPU kernels allocate themselves: alignment as
// asked, a freed large block handed back for the next request of its size
// (what keeps a kernel's padded copy from faulting its pages in on every
// run), never for a request of less than half its size, and blocks intact
// under allocations from several threads at once. Linked with the model
// runtime archive itself (the functions are hidden in model.so).
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

extern "C" {
void *_mlir_memref_to_llvm_alloc(uint64_t bytes);
void *_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t bytes);
void _mlir_memref_to_llvm_free(void *ptr);
}

namespace {

uintptr_t address(void *p) { return reinterpret_cast<uintptr_t>(p); }

TEST(KernelAlloc, Alignment) {
  for (uint64_t bytes : {1ull, 100ull, 4096ull, 1ull << 20}) {
    void *p = _mlir_memref_to_llvm_alloc(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(address(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);
    _mlir_memref_to_llvm_free(p);
    for (uint64_t alignment : {16ull, 64ull, 256ull, 4096ull}) {
      void *q = _mlir_memref_to_llvm_aligned_alloc(alignment, bytes);
      ASSERT_NE(q, nullptr);
      EXPECT_EQ(address(q) % alignment, 0u) << alignment << " " << bytes;
      std::memset(q, 0xcd, bytes);
      _mlir_memref_to_llvm_free(q);
    }
  }
  _mlir_memref_to_llvm_free(nullptr);
  // Not a power of two: no block.
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(96, 1024), nullptr);
}

TEST(KernelAlloc, LargeBlocksAreReused) {
  const uint64_t mib = 1 << 20;
  void *p = _mlir_memref_to_llvm_alloc(3 * mib);
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 3 * mib);
  _mlir_memref_to_llvm_free(p);
  // The next run's request of the same size (or a little less) gets it.
  void *q = _mlir_memref_to_llvm_alloc(3 * mib - 4096);
  EXPECT_EQ(q, p);
  _mlir_memref_to_llvm_free(q);
  // Less than half of it: a block of its own (the 3 MiB one stays cached).
  void *small = _mlir_memref_to_llvm_alloc(mib);
  ASSERT_NE(small, nullptr);
  EXPECT_NE(small, p);
  // More than it holds: a new block.
  void *large = _mlir_memref_to_llvm_alloc(4 * mib);
  ASSERT_NE(large, nullptr);
  EXPECT_NE(large, p);
  std::memset(large, 2, 4 * mib);
  void *again = _mlir_memref_to_llvm_alloc(3 * mib);
  EXPECT_EQ(again, p);
  _mlir_memref_to_llvm_free(small);
  _mlir_memref_to_llvm_free(large);
  _mlir_memref_to_llvm_free(again);
}

TEST(KernelAlloc, ThreadsKeepTheirBlocks) {
  // Each thread fills its blocks with its own byte and checks it before
  // freeing: a block handed to two threads at once shows as a wrong byte.
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t, &bad] {
      std::mt19937 rng(t + 1);
      std::vector<std::pair<unsigned char *, uint64_t>> live;
      for (int i = 0; i < 2000; ++i) {
        if (live.size() < 6 && rng() % 3 != 0) {
          uint64_t bytes = 1000 + rng() % (300 * 1024);
          auto *p =
              static_cast<unsigned char *>(_mlir_memref_to_llvm_alloc(bytes));
          if (!p) {
            ++bad[t];
            continue;
          }
          std::memset(p, 0x10 + t, bytes);
          live.emplace_back(p, bytes);
        } else if (!live.empty()) {
          size_t k = rng() % live.size();
          auto [p, bytes] = live[k];
          for (uint64_t j = 0; j < bytes; j += 997)
            bad[t] += p[j] != 0x10 + t;
          bad[t] += p[bytes - 1] != 0x10 + t;
          _mlir_memref_to_llvm_free(p);
          live.erase(live.begin() + k);
        }
      }
      for (auto [p, bytes] : live)
        _mlir_memref_to_llvm_free(p);
    });
  for (auto &t : threads)
    t.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(bad[t], 0) << "thread " << t;
}

} // namespace
