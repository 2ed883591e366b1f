// RUN: kiln-opt %s --kiln-flatten-globals | FileCheck %s
// RUN: kiln-opt %s --kiln-flatten-globals --expand-strided-metadata --kiln-convert-host-to-llvm --reconcile-unrealized-casts | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --kiln-flatten-globals --expand-strided-metadata --kiln-convert-host-to-llvm --reconcile-unrealized-casts | mlir-translate --mlir-to-llvmir | llc -O0 | FileCheck %s --check-prefix=ASM

// Initialized constant globals become arrays of their bytes (dense,
// resource and non-zero splat values alike, rank 1 included); each use
// reads the bytes and views them as the old type. i8, i1, uninitialized
// globals and splats of zeros are left alone.

// CHECK: memref.global "private" constant @w : memref<48xi8> = dense<[0, 0, -128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, -128, 64, 0, 0, -96, 64, 0, 0, -64, 64, 0, 0, -32, 64, 0, 0, 0, 65, 0, 0, 16, 65, 0, 0, 32, 65, 0, 0, 48, 65, 0, 0, 64, 65]> {alignment = 64 : i64}
// CHECK: memref.global "private" constant @r : memref<16xi8> = dense_resource<blob>
// CHECK: memref.global "private" constant @s : memref<12xi8> = dense<[0, 0, 0, 63, 0, 0, 0, 63, 0, 0, 0, 63]>
// CHECK: memref.global "private" constant @z : memref<2x3xf32> = dense<0.000000e+00>
// CHECK: memref.global "private" constant @v : memref<6xi8> = dense<[0, 60, 0, 64, 0, 66]>
// CHECK: memref.global "private" constant @b : memref<2x2xi1>
// CHECK: memref.global "private" @u : memref<2x2xf32> = uninitialized
// CHECK-LABEL: func.func @main
// CHECK: %[[W:.*]] = memref.get_global @w : memref<48xi8>
// CHECK: memref.view %[[W]][%{{.*}}][] : memref<48xi8> to memref<2x3x2xf32>
// CHECK: %[[R:.*]] = memref.get_global @r : memref<16xi8>
// CHECK: memref.view %[[R]][%{{.*}}][] : memref<16xi8> to memref<2x2xf32>
// CHECK: %[[V:.*]] = memref.get_global @v : memref<6xi8>
// CHECK: memref.view %[[V]][%{{.*}}][] : memref<6xi8> to memref<3xf16>
// CHECK: memref.get_global @u : memref<2x2xf32>

// In LLVM IR the weights are one array of bytes, not nested arrays of
// floats; the assembly is one .ascii blob per global.
// IR: @w = private constant [48 x i8] c"\00\00\80?\00\00\00@\00\00@@
// IR: @r = private constant [16 x i8] c"\00\00\80?\00\00\00@\00\00@@\00\00\80\C0"
// IR-NOT: {{\[}}3 x [2 x float]]
// ASM-LABEL: w:
// ASM-NEXT: .ascii
// ASM-NOT: .long

module {
  memref.global "private" constant @w : memref<2x3x2xf32> = dense<[[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], [[7.0, 8.0], [9.0, 10.0], [11.0, 12.0]]]> {alignment = 64 : i64}
  memref.global "private" constant @r : memref<2x2xf32> = dense_resource<blob>
  memref.global "private" constant @s : memref<3xf32> = dense<0.5>
  memref.global "private" constant @z : memref<2x3xf32> = dense<0.0>
  memref.global "private" constant @v : memref<3xf16> = dense<[1.0, 2.0, 3.0]>
  memref.global "private" constant @b : memref<2x2xi1> = dense<true>
  memref.global "private" @u : memref<2x2xf32> = uninitialized
  func.func @main() -> (memref<2x3x2xf32>, memref<2x2xf32>, memref<3xf16>, memref<2x2xf32>) {
    %w = memref.get_global @w : memref<2x3x2xf32>
    %r = memref.get_global @r : memref<2x2xf32>
    %v = memref.get_global @v : memref<3xf16>
    %u = memref.get_global @u : memref<2x2xf32>
    return %w, %r, %v, %u : memref<2x3x2xf32>, memref<2x2xf32>, memref<3xf16>, memref<2x2xf32>
  }
}

{-#
  dialect_resources: {
    builtin: {
      blob: "0x040000000000803F0000004000004040000080C0"
    }
  }
#-}
