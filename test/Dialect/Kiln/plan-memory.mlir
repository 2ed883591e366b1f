// RUN: kiln-opt %s -split-input-file --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-plan-memory=in-place=false | FileCheck %s --check-prefix=NOINPLACE

#id = affine_map<(d0) -> (d0)>

// A chain a → b → c → output of elementwise kernels: each writes in place
// over its input, which dies at that launch, so all three share one slot.
// CHECK-LABEL: module attributes {kiln.arena_size = 4096 : i64, kiln.intermediate_bytes = 12288 : i64, kiln.peak_live_bytes = 4096 : i64}
// CHECK: %[[A:.*]] = kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
// CHECK: %[[B:.*]] = kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
// CHECK: %[[C:.*]] = kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
// Without in-place reuse, an input and the output of each launch are live at
// once; a and c (not live together) still share.
// NOINPLACE-LABEL: module attributes {kiln.arena_size = 8192 : i64, kiln.intermediate_bytes = 12288 : i64, kiln.peak_live_bytes = 8192 : i64}
// NOINPLACE: kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
// NOINPLACE: kiln.buffer %{{.*}} {offset = 4096 : i64} : memref<1024xf32>
// NOINPLACE: kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
module {
  func.func private @k0(%x: memref<1024xf32>, %o: memref<1024xf32>) {
    return
  }
  // Elementwise: reads %i and writes %o at the same index.
  func.func private @k1(%i: memref<1024xf32>, %o: memref<1024xf32>) {
    %t = bufferization.to_tensor %i restrict : memref<1024xf32> to tensor<1024xf32>
    %e = tensor.empty() : tensor<1024xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%t : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
    ^bb0(%p: f32, %q: f32):
      %r = arith.negf %p : f32
      linalg.yield %r : f32
    } -> tensor<1024xf32>
    bufferization.materialize_in_destination %g in restrict writable %o : (tensor<1024xf32>, memref<1024xf32>) -> ()
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @k0(%x, %a) : memref<1024xf32>, memref<1024xf32>
    %b = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @k1(%a, %b) : memref<1024xf32>, memref<1024xf32>
    %c = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @k1(%b, %c) : memref<1024xf32>, memref<1024xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @k0(%c, %y) : memref<1024xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// In-place would be wrong here: k0 is not elementwise (an opaque kernel), so
// a and b get different slots. The small buffer s, defined after a's last
// use, goes into the gap a leaves.
// CHECK-LABEL: module attributes {kiln.arena_size = 8192 : i64
// CHECK: %[[A:.*]] = kiln.buffer %{{.*}} {offset = 0 : i64} : memref<1024xf32>
// CHECK: %[[B:.*]] = kiln.buffer %{{.*}} {offset = 4096 : i64} : memref<1024xf32>
// CHECK: kiln.buffer %{{.*}} {offset = 0 : i64} : memref<16xf32>
module {
  func.func private @k0(%x: memref<1024xf32>, %o: memref<1024xf32>) {
    return
  }
  func.func private @k2(%x: memref<1024xf32>, %y: memref<1024xf32>, %o: memref<16xf32>) {
    return
  }
  func.func private @k3(%x: memref<1024xf32>, %y: memref<16xf32>, %o: memref<1024xf32>) {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @k0(%x, %a) : memref<1024xf32>, memref<1024xf32>
    %b = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @k0(%a, %b) : memref<1024xf32>, memref<1024xf32>
    %s = kiln.buffer %ctx : memref<16xf32>
    kiln.launch %ctx @k2(%b, %b, %s) : memref<1024xf32>, memref<1024xf32>, memref<16xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @k3(%b, %s, %y) : memref<1024xf32>, memref<16xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
