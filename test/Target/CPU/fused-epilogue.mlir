// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512 min-parallel-work=1" | FileCheck %s
// RUN: kiln-opt %s --split-input-file --kiln-cpu-codegen="vector-bits=512 vectorize=false min-parallel-work=1" | FileCheck %s --check-prefix=UNFUSED

// A matmul into a zero-filled temporary, then bias + relu into the
// kernel's output: one task body whose register tiles start at zero (no
// fill, no load of the temporary), add the bias vector and take the max
// with zero on the accumulators, and store them to the output. The
// temporary is never written.
// CHECK-LABEL: func.func private @fused_p0(
// CHECK-NOT: linalg.
// CHECK: %[[ZERO:.*]] = arith.constant dense<0.000000e+00> : vector<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]],
// CHECK: vector.fma
// CHECK: %[[BIAS:.*]] = vector.load %{{.*}} : memref<{{.*}}>, vector<16xf32>
// CHECK: %[[SUM:.*]] = arith.addf %{{.*}}, %[[BIAS]] : vector<16xf32>
// CHECK: arith.maximumf %[[SUM]], %{{.*}} : vector<16xf32>
// CHECK: vector.store
// CHECK-NOT: linalg.
// CHECK: return
// CHECK-LABEL: func.func private @fused(
// CHECK: kiln.parallel_for @fused_p0(
// CHECK-NOT: kiln.parallel_for
// CHECK: return
// Without the vector tiles the three stay three split ops.
// UNFUSED-LABEL: func.func private @fused(
// UNFUSED: kiln.parallel_for @fused_p0(
// UNFUSED: kiln.parallel_for @fused_p1(
// UNFUSED: kiln.parallel_for @fused_p2(
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
module {
  func.func private @fused(%x: memref<64x128xf32>, %w: memref<128x64xf32>, %bias: memref<64xf32>, %y: memref<64x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<64x64xf32>, memref<64xf32>) outs(%y : memref<64x64xf32>) {
    ^bb0(%v: f32, %b: f32, %o: f32):
      %s = arith.addf %v, %b : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<64x64xf32>
    return
  }
}

// -----

// The temporary is read again after the epilogue: only the fill is taken
// in; the product is stored and the epilogue runs on its own.
// CHECK-LABEL: func.func private @reread_p0(
// CHECK-NOT: linalg.fill
// CHECK: vector.fma
// CHECK-LABEL: func.func private @reread_p1(
// CHECK: arith.addf
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(m, n) -> (m, n)>
#row = affine_map<(m, n) -> (n)>
module {
  func.func private @reread(%x: memref<64x128xf32>, %w: memref<128x64xf32>, %bias: memref<64xf32>, %y: memref<64x64xf32>, %z: memref<64x64xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%t, %bias : memref<64x64xf32>, memref<64xf32>) outs(%y : memref<64x64xf32>) {
    ^bb0(%v: f32, %b: f32, %o: f32):
      %s = arith.addf %v, %b : f32
      linalg.yield %s : f32
    }
    memref.copy %t, %z : memref<64x64xf32> to memref<64x64xf32>
    memref.dealloc %t : memref<64x64xf32>
    return
  }
}
