// RUN: kiln-opt %s --kiln-convert-host-to-llvm --reconcile-unrealized-casts --canonicalize | FileCheck %s

// Tile and im2col maps (sm_90a contractions) are encoded by the runtime into
// a 64-byte-aligned stack slot of 128 bytes, then loaded as the kernel's
// by-value parameter. Dims, byte strides, boxes, the im2col window and its
// element strides go innermost first (1 for the channels and the batch).

// CHECK-DAG: llvm.func @kiln_rt_tile_map(!llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64)
// CHECK-DAG: llvm.func @kiln_rt_im2col_map(!llvm.ptr, !llvm.ptr, i64, i64, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, i64, i64)
// CHECK-LABEL: llvm.func @kiln_model_main(
// CHECK-DAG: %[[PX:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK-DAG: %[[CH:.*]] = llvm.mlir.constant(64 : i64) : i64
// CHECK-DAG: %[[UH:.*]] = llvm.mlir.constant(-2 : i64) : i64
// CHECK-DAG: %[[UW:.*]] = llvm.mlir.constant(-3 : i64) : i64
// CHECK-DAG: %[[RANK:.*]] = llvm.mlir.constant(4 : i64) : i64
// (1: the element strides of the channels and the batch, and KILN_DTYPE_F16)
// CHECK-DAG: %[[ONE:.*]] = llvm.mlir.constant(1 : i64) : i64
// CHECK-DAG: %[[TWO:.*]] = llvm.mlir.constant(2 : i64) : i64
// The activation's dims: 64 channels, 58 wide, 58 tall, 8 images.
// CHECK: %[[DIMS:.*]] = llvm.alloca %{{.*}} x !llvm.array<4 x i64>
// CHECK-NEXT: llvm.store %[[C64:.*]], %[[DIMS]]
// CHECK: %[[SLOT:.*]] = llvm.alloca %{{.*}} x vector<16xi64> {alignment = 64 : i64}
// CHECK: %[[LO:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x i64>
// CHECK: %[[UP:.*]] = llvm.alloca %{{.*}} x !llvm.array<2 x i64>
// CHECK-NEXT: llvm.store %[[UW]], %[[UP]]
// CHECK: llvm.store %[[UH]],
// CHECK: %[[ES:.*]] = llvm.alloca %{{.*}} x !llvm.array<4 x i64>
// CHECK-NEXT: llvm.store %[[ONE]], %[[ES]]
// CHECK-NEXT: %[[ESW:.*]] = llvm.getelementptr %[[ES]][1]
// CHECK-NEXT: llvm.store %[[TWO]], %[[ESW]]
// CHECK: llvm.call @kiln_rt_im2col_map(%{{.*}}, %[[SLOT]], %[[ONE]], %[[RANK]], %{{.*}}, %[[DIMS]], %{{.*}}, %[[LO]], %[[UP]], %[[ES]], %[[CH]], %[[PX]], %[[PX]])
// CHECK-NEXT: llvm.load %[[SLOT]] {alignment = 64 : i64} : !llvm.ptr -> vector<16xi64>
// CHECK: llvm.call @kiln_rt_tile_map(
module attributes {gpu.container_module, kiln.device = "cuda sm_90a", kiln.num_weights = 0 : i64} {
  gpu.binary @kernels [#gpu.object<#nvvm.target<chip = "sm_90a">, "IMAGE">]
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = memref.alloc() : memref<8x58x58x64xf16>
    %w = memref.alloc() : memref<3x3x64x128xf16>
    %ma = kiln.im2col_map %ctx, %x pixels 128 channels 64 lower [0, 0] upper [-2, -3] strides [1, 2] swizzle 128 : memref<8x58x58x64xf16>
    %mb = kiln.tile_map %ctx, %w box [1, 1, 64, 64] swizzle 128 : memref<3x3x64x128xf16>
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%ma : vector<16xi64>, %mb : vector<16xi64>)
    %c0 = arith.constant 0 : i32
    return %c0 : i32
  }
}
