// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512" | FileCheck %s

// Weights the host program reads from the weights file (--external-weights:
// an external weight, or a persistent buffer kiln_model_init computed from
// one) are packed at load: a pack kernel (out[p, k, j] = in[k, p * 32 + j])
// runs at the end of kiln_model_init into a persistent buffer of its own,
// appended to the arena (64 KiB each: it grows from 1 MiB + 64 KiB to
// 1 MiB + 192 KiB), and the matmuls read the panels. The pack kernel reads
// its input's last dim as (panel, column): a vectorized copy. Both launches
// of @k share the external weight's panels.
// CHECK: module attributes {kiln.arena_size = 1245184 : i64, {{.*}}kiln.persistent_size = 196608 : i64}
// CHECK-LABEL: func.func private @k(
// CHECK-SAME: memref<8x64x32xf32>
// CHECK-LABEL: func.func private @kiln_pack_panels_0(
// CHECK-SAME: %{{.*}}: memref<64x256xf32>, %{{.*}}: memref<8x64x32xf32>) attributes {{{.*}}kiln.cpu_vector_bits = 512
// CHECK: memref.expand_shape %{{.*}} {{\[}}[0], [1, 2]] output_shape [64, 8, 32] : memref<64x256xf32> into memref<64x8x32xf32>
// CHECK: vector.load
// CHECK-LABEL: func.func @kiln_model_init(
// CHECK: kiln.launch %{{.*}} @t(
// CHECK: %[[W:.*]] = kiln.external_weight %{{.*}}[0] : memref<64x256xf32>
// CHECK: %[[P:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 65536 : i64, offset = 1114112 : i64} : memref<8x64x32xf32>
// CHECK: kiln.launch %{{.*}} @kiln_pack_panels_0(%[[W]], %[[P]])
// CHECK: %[[T:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 0 : i64, offset = 1048576 : i64} : memref<64x256xf32>
// CHECK: %[[Q:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 131072 : i64, offset = 1179648 : i64} : memref<8x64x32xf32>
// CHECK: kiln.launch %{{.*}} @kiln_pack_panels_1(%[[T]], %[[Q]])
// CHECK: return
// CHECK-LABEL: func.func @kiln_model_main(
// CHECK: %[[A:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 65536 : i64, offset = 1114112 : i64} : memref<8x64x32xf32>
// CHECK: kiln.launch %{{.*}} @k(%{{.*}}, %[[A]], %{{.*}})
// CHECK: %[[B:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 65536 : i64, offset = 1114112 : i64} : memref<8x64x32xf32>
// CHECK: kiln.launch %{{.*}} @k(%{{.*}}, %[[B]], %{{.*}})
// CHECK: %[[C:.*]] = kiln.buffer %{{.*}} {kiln.persistent = 131072 : i64, offset = 1179648 : i64} : memref<8x64x32xf32>
// CHECK: kiln.launch %{{.*}} @k2(%{{.*}}, %[[C]], %{{.*}})
module attributes {kiln.arena_size = 1114112 : i64, kiln.persistent_size = 65536 : i64} {
  func.func private @k(%x: memref<64x64xf32>, %w: memref<64x256xf32>, %y: memref<64x256xf32>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    linalg.matmul ins(%x, %w : memref<64x64xf32>, memref<64x256xf32>) outs(%y : memref<64x256xf32>)
    return
  }
  func.func private @k2(%x: memref<64x64xf32>, %w: memref<64x256xf32>, %y: memref<64x256xf32>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    linalg.matmul ins(%x, %w : memref<64x64xf32>, memref<64x256xf32>) outs(%y : memref<64x256xf32>)
    return
  }
  func.func private @t(%w: memref<256x64xf32>, %y: memref<64x256xf32>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    linalg.transpose ins(%w : memref<256x64xf32>) outs(%y : memref<64x256xf32>) permutation = [1, 0]
    return
  }
  func.func @kiln_model_init(%ctx: !llvm.ptr) -> i32 {
    %w = kiln.external_weight %ctx[1] : memref<256x64xf32>
    %t = kiln.buffer %ctx {kiln.persistent = 0 : i64, offset = 1048576 : i64} : memref<64x256xf32>
    kiln.launch %ctx @t(%w, %t) : memref<256x64xf32>, memref<64x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = kiln.input %ctx [0] : memref<64x64xf32>
    %w = kiln.external_weight %ctx[0] : memref<64x256xf32>
    %y = kiln.buffer %ctx {offset = 0 : i64} : memref<64x256xf32>
    kiln.launch %ctx @k(%x, %w, %y) : memref<64x64xf32>, memref<64x256xf32>, memref<64x256xf32>
    %y2 = kiln.buffer %ctx {offset = 65536 : i64} : memref<64x256xf32>
    kiln.launch %ctx @k(%x, %w, %y2) : memref<64x64xf32>, memref<64x256xf32>, memref<64x256xf32>
    %t = kiln.buffer %ctx {kiln.persistent = 0 : i64, offset = 1048576 : i64} : memref<64x256xf32>
    %y3 = kiln.buffer %ctx {offset = 131072 : i64} : memref<64x256xf32>
    kiln.launch %ctx @k2(%x, %t, %y3) : memref<64x64xf32>, memref<64x256xf32>, memref<64x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
