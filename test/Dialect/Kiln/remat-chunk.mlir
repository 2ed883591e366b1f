// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-fraction=0.3 --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-fraction=0.6 --kiln-plan-memory | FileCheck %s --check-prefix=TWO
// RUN: not kiln-opt %s -split-input-file --kiln-remat="budget-fraction=0.6 chunk=false" 2>&1 | FileCheck %s --check-prefix=OFF

// Batch chunking of a large kernel: the peak (32 KiB) is the second flip's
// input and output, which recomputation cannot split. Every kernel computes
// each of the 4 batch rows on its own, so the run expand, flip, flip, sum is
// launched once per chunk: at 0.3x (9830 bytes) 4 chunks of one row (8 KiB:
// the flips' 4 KiB input and output), at 0.6x 2 chunks of two rows (16 KiB).
// The model input and output are read and written in slices at the chunk's
// first row (an index argument); t, u and v exist only per chunk.
// CHECK-LABEL: module attributes {kiln.arena_size = 8192 : i64
// CHECK-SAME: kiln.peak_live_bytes = 8192 : i64
// CHECK-SAME: kiln.remat = {arena_before = 32768 : i64, budget_bytes = 9830 : i64, peak_before = 32768 : i64
// The clones for one row: the input sliced at %off, the output written
// through a subview at %off, the intermediates retyped.
// CHECK: func.func private @expand_b1(%[[X:.*]]: memref<4x256xf32>, %[[BASE:.*]]: index, %{{.*}}: memref<1x4x256xf32>) attributes {kiln.chunk_of = "expand", kiln.num_outputs = 1 : i64}
// CHECK: %[[XT:.*]] = bufferization.to_tensor %[[X]]
// CHECK-NEXT: tensor.extract_slice %[[XT]][%[[BASE]], 0] [1, 256] [1, 1] : tensor<4x256xf32> to tensor<1x256xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x4x256xf32>)
// CHECK: func.func private @flip_b1(%{{.*}}: memref<1x4x256xf32>, %{{.*}}: memref<1x4x256xf32>) attributes {kiln.chunk_of = "flip", kiln.num_outputs = 1 : i64}
// CHECK: func.func private @sum_b1(%{{.*}}: memref<1x4x256xf32>, %[[SOFF:.*]]: index, %[[Y:.*]]: memref<4x256xf32>) attributes {kiln.chunk_of = "sum", kiln.num_outputs = 1 : i64}
// CHECK-NEXT: %[[YS:.*]] = memref.subview %[[Y]][%[[SOFF]], 0] [1, 256] [1, 1] : memref<4x256xf32> to memref<1x256xf32, strided<[256, 1], offset: ?>>
// CHECK: bufferization.materialize_in_destination %{{.*}} in restrict writable %[[YS]]
// The originals are gone: every launch of theirs was chunked.
// CHECK-NOT: func.func private @flip(
// CHECK: %[[IN:.*]] = kiln.input
// CHECK: %[[OUT:.*]] = kiln.output
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[T0:.*]] = kiln.buffer %{{.*}} {offset = {{.*}}} : memref<1x4x256xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @expand_b1(%[[IN]], %[[C0]], %[[T0]]) {kiln.chunk = array<i64: 0, 4>, kiln.launch_nodes = "t"}
// CHECK-NEXT: %[[U0:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @flip_b1(%[[T0]], %[[U0]]) {kiln.chunk = array<i64: 0, 4>, kiln.launch_nodes = "u"}
// CHECK-NEXT: %[[V0:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @flip_b1(%[[U0]], %[[V0]]) {kiln.chunk = array<i64: 0, 4>, kiln.launch_nodes = "v"}
// CHECK-NEXT: kiln.launch %{{.*}} @sum_b1(%[[V0]], %[[C0]], %[[OUT]]) {kiln.chunk = array<i64: 0, 4>, kiln.launch_nodes = "y"}
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK: kiln.launch %{{.*}} @expand_b1(%[[IN]], %[[C1]], %{{.*}}) {kiln.chunk = array<i64: 1, 4>
// CHECK: %[[C3:.*]] = arith.constant 3 : index
// CHECK: kiln.launch %{{.*}} @sum_b1(%{{.*}}, %[[C3]], %[[OUT]]) {kiln.chunk = array<i64: 3, 4>
// CHECK-NOT: kiln.launch %
// TWO-LABEL: module attributes {kiln.arena_size = 16384 : i64
// TWO-SAME: budget_bytes = 19660 : i64
// TWO: func.func private @expand_b2(%{{.*}}: memref<4x256xf32>, %{{.*}}: index, %{{.*}}: memref<2x4x256xf32>)
// TWO-COUNT-8: kiln.chunk = array<i64: {{[01]}}, 2>
// TWO-NOT: kiln.launch %
// OFF: error: memory budget of 19660 bytes (19.20 KiB) cannot be met: the smallest peak reached is 32768 bytes (32.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 32768 bytes
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rev3 = affine_map<(d0, d1, d2) -> (d0, d1, -d2 + 255)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d2)>
module {
  func.func private @expand(%x: memref<4x256xf32>, %o: memref<4x4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x256xf32> to tensor<4x256xf32>
    %1 = tensor.empty() : tensor<4x4x256xf32>
    %2 = linalg.generic {indexing_maps = [#row3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<4x256xf32>) outs(%1 : tensor<4x4x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4x256xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x4x256xf32>, memref<4x4x256xf32>) -> ()
    return
  }
  func.func private @flip(%x: memref<4x4x256xf32>, %o: memref<4x4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x4x256xf32> to tensor<4x4x256xf32>
    %1 = tensor.empty() : tensor<4x4x256xf32>
    %2 = linalg.generic {indexing_maps = [#rev3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<4x4x256xf32>) outs(%1 : tensor<4x4x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4x256xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x4x256xf32>, memref<4x4x256xf32>) -> ()
    return
  }
  func.func private @sum(%x: memref<4x4x256xf32>, %o: memref<4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %cst = arith.constant 0.0 : f32
    %0 = bufferization.to_tensor %x restrict : memref<4x4x256xf32> to tensor<4x4x256xf32>
    %1 = tensor.empty() : tensor<4x256xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<4x256xf32>) -> tensor<4x256xf32>
    %3 = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "reduction", "parallel"]} ins(%0 : tensor<4x4x256xf32>) outs(%2 : tensor<4x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %4 = arith.addf %in, %out : f32
      linalg.yield %4 : f32
    } -> tensor<4x256xf32>
    bufferization.materialize_in_destination %3 in restrict writable %o : (tensor<4x256xf32>, memref<4x256xf32>) -> ()
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 4 256\0Aoutput y f32 2 4 256\0A"} {
    %x = kiln.input %ctx [0] : memref<4x256xf32>
    %t = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @expand(%x, %t) {kiln.launch_nodes = "t"} : memref<4x256xf32>, memref<4x4x256xf32>
    %u = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @flip(%t, %u) {kiln.launch_nodes = "u"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %v = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @flip(%u, %v) {kiln.launch_nodes = "v"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %y = kiln.output %ctx [0] : memref<4x256xf32>
    kiln.launch %ctx @sum(%v, %y) {kiln.launch_nodes = "y"} : memref<4x4x256xf32>, memref<4x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// The run stops at a kernel that mixes batch rows (@shift reads row b + 1
// for row b): its output m comes from before the run and is read in slices
// of the whole buffer by each chunk (Full), while u exists per chunk, and so
// does the host's row-major view of it (4x4096 -> rows x 4096). The peak is
// m and u at @spread (4 + 64 KiB); at 0.3x (20889 bytes) 4 chunks (4 + 16
// KiB), at 0.6x 2 (4 + 32 KiB).
// CHECK-LABEL: module attributes {kiln.arena_size = 20480 : i64
// CHECK-SAME: kiln.peak_live_bytes = 20480 : i64
// CHECK: func.func private @spread_b1(%{{.*}}: memref<4x256xf32>, %{{.*}}: index, %{{.*}}: memref<1x16x256xf32>)
// CHECK: func.func private @rows_b1(%{{.*}}: memref<1x4096xf32>, %{{.*}}: index, %{{.*}}: memref<4x4096xf32>)
// CHECK: %[[M:.*]] = kiln.buffer {{.*}} : memref<4x256xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @shift(
// CHECK: %[[OUT:.*]] = kiln.output
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[U0:.*]] = kiln.buffer {{.*}} : memref<1x16x256xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @spread_b1(%[[M]], %[[C0]], %[[U0]]) {kiln.chunk = array<i64: 0, 4>
// CHECK-NEXT: %[[V0:.*]] = memref.reinterpret_cast %[[U0]] to offset: [0], sizes: [1, 4096], strides: [4096, 1] : memref<1x16x256xf32> to memref<1x4096xf32>
// CHECK-NEXT: kiln.launch %{{.*}} @rows_b1(%[[V0]], %[[C0]], %[[OUT]]) {kiln.chunk = array<i64: 0, 4>
// CHECK-COUNT-3: kiln.launch %{{.*}} @spread_b1(%[[M]]
// CHECK: kiln.launch %{{.*}} @rows_b1({{.*}}) {kiln.chunk = array<i64: 3, 4>
// CHECK-NOT: kiln.launch %
// TWO-LABEL: module attributes {kiln.arena_size = 36864 : i64
// TWO: kiln.chunk = array<i64: 1, 2>
// TWO-NOT: kiln.chunk = array<i64: 2,
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#next2 = affine_map<(d0, d1) -> ((d0 + 1) mod 4, d1)>
#rev2 = affine_map<(d0, d1) -> (d0, -d1 + 4095)>
#spread = affine_map<(d0, d1, d2) -> (d0, -d2 + 255)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
module {
  func.func private @shift(%x: memref<4x256xf32>, %o: memref<4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x256xf32> to tensor<4x256xf32>
    %1 = tensor.empty() : tensor<4x256xf32>
    %2 = linalg.generic {indexing_maps = [#next2, #id2], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x256xf32>) outs(%1 : tensor<4x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x256xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x256xf32>, memref<4x256xf32>) -> ()
    return
  }
  func.func private @spread(%x: memref<4x256xf32>, %o: memref<4x16x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x256xf32> to tensor<4x256xf32>
    %1 = tensor.empty() : tensor<4x16x256xf32>
    %2 = linalg.generic {indexing_maps = [#spread, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<4x256xf32>) outs(%1 : tensor<4x16x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x16x256xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x16x256xf32>, memref<4x16x256xf32>) -> ()
    return
  }
  func.func private @rows(%x: memref<4x4096xf32>, %o: memref<4x4096xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x4096xf32> to tensor<4x4096xf32>
    %1 = tensor.empty() : tensor<4x4096xf32>
    %2 = linalg.generic {indexing_maps = [#rev2, #id2], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x4096xf32>) outs(%1 : tensor<4x4096xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<4x4096xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x4096xf32>, memref<4x4096xf32>) -> ()
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 4 256\0Aoutput y f32 2 4 4096\0A"} {
    %x = kiln.input %ctx [0] : memref<4x256xf32>
    %m = kiln.buffer %ctx : memref<4x256xf32>
    kiln.launch %ctx @shift(%x, %m) {kiln.launch_nodes = "m"} : memref<4x256xf32>, memref<4x256xf32>
    %u = kiln.buffer %ctx : memref<4x16x256xf32>
    kiln.launch %ctx @spread(%m, %u) {kiln.launch_nodes = "u"} : memref<4x256xf32>, memref<4x16x256xf32>
    %v = memref.reinterpret_cast %u to offset: [0], sizes: [4, 4096], strides: [4096, 1] : memref<4x16x256xf32> to memref<4x4096xf32>
    %y = kiln.output %ctx [0] : memref<4x4096xf32>
    kiln.launch %ctx @rows(%v, %y) {kiln.launch_nodes = "y"} : memref<4x4096xf32>, memref<4x4096xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
