// RUN: kiln-opt %s --kiln-remat=budget-bytes=50000 --kiln-plan-memory | FileCheck %s

// A value kept because recomputing it is too expensive: c (a 64x64x64
// matmul, 524288 FLOPs) and e (an elementwise scale, 4096 FLOPs) are both
// live across the peak (m2's launch, 64 KiB) and read again by `join`.
// Either saves 16 KiB there; the scale costs 128x fewer FLOPs, so e is
// recomputed and c kept: 48 KiB fits 50000 bytes.
// CHECK-LABEL: module attributes {kiln.arena_size = 49152 : i64
// CHECK-SAME: arena_before = 65536 : i64, budget_bytes = 50000 : i64, peak_before = 65536 : i64
// CHECK: %[[X:.*]] = kiln.input
// CHECK: %[[C:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @matmul
// CHECK-NOT: @matmul
// CHECK: %[[Y:.*]] = kiln.output
// CHECK-NEXT: %[[E2:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @scale(%[[X]], %[[E2]]) {kiln.launch_nodes = "e", kiln.remat = "recompute"}
// CHECK-NEXT: kiln.launch %{{.*}} @join(%[[C]], %[[E2]], %{{.*}}, %[[Y]])
// CHECK-NOT: @matmul
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  memref.global "private" constant @w : memref<64x64xf32> = dense<1.0>
  func.func private @matmul(%x: memref<64x64xf32>, %w: memref<64x64xf32>, %o: memref<64x64xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %a = bufferization.to_tensor %x restrict : memref<64x64xf32> to tensor<64x64xf32>
    %b = bufferization.to_tensor %w restrict : memref<64x64xf32> to tensor<64x64xf32>
    %e = tensor.empty() : tensor<64x64xf32>
    %zero = arith.constant 0.0 : f32
    %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
    %m = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
    bufferization.materialize_in_destination %m in restrict writable %o : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
    return
  }
  func.func private @scale(%x: memref<64x64xf32>, %o: memref<64x64xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %a = bufferization.to_tensor %x restrict : memref<64x64xf32> to tensor<64x64xf32>
    %e = tensor.empty() : tensor<64x64xf32>
    %two = arith.constant 2.0 : f32
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<64x64xf32>) outs(%e : tensor<64x64xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %two : f32
      linalg.yield %r : f32
    } -> tensor<64x64xf32>
    bufferization.materialize_in_destination %g in restrict writable %o : (tensor<64x64xf32>, memref<64x64xf32>) -> ()
    return
  }
  func.func private @add(%x: memref<64x64xf32>, %y: memref<64x64xf32>, %o: memref<64x64xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @cheap(%x: memref<64x64xf32>, %o: memref<64x64xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<64x64xf32>, %y: memref<64x64xf32>, %z: memref<64x64xf32>, %o: memref<64x64xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 64 64\0Aoutput y f32 2 64 64\0A"} {
    %x = kiln.input %ctx [0] : memref<64x64xf32>
    %w = memref.get_global @w : memref<64x64xf32>
    %c = kiln.buffer %ctx : memref<64x64xf32>
    kiln.launch %ctx @matmul(%x, %w, %c) {kiln.launch_nodes = "c"} : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>
    %e = kiln.buffer %ctx : memref<64x64xf32>
    kiln.launch %ctx @scale(%x, %e) {kiln.launch_nodes = "e"} : memref<64x64xf32>, memref<64x64xf32>
    %m1 = kiln.buffer %ctx : memref<64x64xf32>
    kiln.launch %ctx @add(%c, %e, %m1) {kiln.launch_nodes = "m1"} : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>
    %m2 = kiln.buffer %ctx : memref<64x64xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<64x64xf32>, memref<64x64xf32>
    %y = kiln.output %ctx [0] : memref<64x64xf32>
    kiln.launch %ctx @join(%c, %e, %m2, %y) {kiln.launch_nodes = "join"} : memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>, memref<64x64xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

