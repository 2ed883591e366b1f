// RUN: kiln-opt %s --kiln-map-kernels-to-gpu | FileCheck %s

// kilnc --external-weights on a device target: kiln.external_weight is a host
// op (the runtime returns the instance's device copy of the weight), so it
// stays in the host program and reaches the kernel's launcher as a device
// buffer; the kernel's accesses to it run on the device. Embedded constants
// still become kiln.weight.
// CHECK: module attributes {{.*}}kiln.num_weights = 1
// CHECK-LABEL: func.func private @scale
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: memref<4x8xf32>, %[[W:.*]]: memref<8xf32>, %{{.*}}: memref<8xf32>, %{{.*}}: memref<4x8xf32>)
// CHECK: gpu.launch
// CHECK: memref.load %[[W]]
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: %[[EW:.*]] = kiln.external_weight %arg0[0] : memref<8xf32>
// CHECK-NOT: gpu.launch
// CHECK: %[[CW:.*]] = kiln.weight %arg0 @cst[0] : memref<8xf32>
// CHECK: call @scale(%arg0, %{{.*}}, %[[EW]], %[[CW]], %{{.*}})
#map = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
module {
  memref.global "private" constant @cst : memref<8xf32> = dense<1.0>
  func.func private @scale(%x: memref<4x8xf32>, %w: memref<8xf32>, %c: memref<8xf32>, %y: memref<4x8xf32>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#map, #col, #col, #map], iterator_types = ["parallel", "parallel"]}
        ins(%x, %w, %c : memref<4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%y : memref<4x8xf32>) {
    ^bb0(%a: f32, %b: f32, %d: f32, %o: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %m, %d : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 {
    %x = kiln.input %ctx[0] : memref<4x8xf32>
    %w = kiln.external_weight %ctx[0] : memref<8xf32>
    %c = memref.get_global @cst : memref<8xf32>
    %y = kiln.output %ctx[0] : memref<4x8xf32>
    kiln.launch %ctx @scale(%x, %w, %c, %y) : memref<4x8xf32>, memref<8xf32>, memref<8xf32>, memref<4x8xf32>
    %r = arith.constant 0 : i32
    return %r : i32
  }
}
