// RUN: kiln-opt %s --kiln-dedup-kernels | FileCheck %s

#id = affine_map<(d0) -> (d0)>

// @k0 and @k1 are the same kernel (op for op, on different buffers, at
// different locations): one function stays and both launches call it.
// @k2 differs in a constant, @k3 in an attribute of the function, @k4 in
// its type: each stays with its launch.
// CHECK-LABEL: func.func private @k0
// CHECK-SAME: kiln.kernel_aliases = ["k1"]
// CHECK-NOT: func.func private @k1
// CHECK-LABEL: func.func private @k2
// CHECK-LABEL: func.func private @k3
// CHECK-LABEL: func.func private @k4
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: kiln.launch %{{.*}} @k0(%{{.*}}, %[[A:.*]]) :
// CHECK: kiln.launch %{{.*}} @k0(%[[A]], %{{.*}}) :
// CHECK: kiln.launch %{{.*}} @k2(
// CHECK: kiln.launch %{{.*}} @k3(
// CHECK: kiln.launch %{{.*}} @k4(
module {
  func.func private @k0(%i: memref<16xf32>, %o: memref<16xf32>) attributes {kiln.kernel} {
    %c = arith.constant 2.0 : f32
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%i : memref<16xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %c : f32
      linalg.yield %r : f32
    }
    return
  }
  func.func private @k1(%x: memref<16xf32>, %y: memref<16xf32>) attributes {kiln.kernel} {
    %c = arith.constant 2.0 : f32 loc("other")
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : memref<16xf32>) outs(%y : memref<16xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %c : f32 loc("other")
      linalg.yield %r : f32
    }
    return
  }
  func.func private @k2(%i: memref<16xf32>, %o: memref<16xf32>) attributes {kiln.kernel} {
    %c = arith.constant 3.0 : f32
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%i : memref<16xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %c : f32
      linalg.yield %r : f32
    }
    return
  }
  func.func private @k3(%i: memref<16xf32>, %o: memref<16xf32>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    %c = arith.constant 2.0 : f32
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%i : memref<16xf32>) outs(%o : memref<16xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %c : f32
      linalg.yield %r : f32
    }
    return
  }
  func.func private @k4(%i: memref<8xf32>, %o: memref<8xf32>) attributes {kiln.kernel} {
    %c = arith.constant 2.0 : f32
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%i : memref<8xf32>) outs(%o : memref<8xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.mulf %p, %c : f32
      linalg.yield %r : f32
    }
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = kiln.input %ctx [0] : memref<16xf32>
    %a = kiln.buffer %ctx : memref<16xf32>
    kiln.launch %ctx @k0(%x, %a) : memref<16xf32>, memref<16xf32>
    %b = kiln.buffer %ctx : memref<16xf32>
    kiln.launch %ctx @k1(%a, %b) : memref<16xf32>, memref<16xf32>
    %c = kiln.buffer %ctx : memref<16xf32>
    kiln.launch %ctx @k2(%b, %c) : memref<16xf32>, memref<16xf32>
    %d = kiln.buffer %ctx : memref<16xf32>
    kiln.launch %ctx @k3(%c, %d) : memref<16xf32>, memref<16xf32>
    %e = kiln.buffer %ctx : memref<8xf32>
    %f = kiln.buffer %ctx : memref<8xf32>
    kiln.launch %ctx @k4(%e, %f) : memref<8xf32>, memref<8xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
