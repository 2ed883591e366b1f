// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-bytes=4000 --verify-diagnostics

// The budget cannot be met: after recomputing t and a (remat.mlir), the
// peak is 9 KiB where t', a' and m3 are live; m2 and m3 (8 KiB) are live at
// m2's launch whatever is recomputed.
module {
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @shrink(%x: memref<1024xf32>, %o: memref<256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<256xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  // expected-error @+1 {{memory budget of 4000 bytes (3.91 KiB) cannot be met: the smallest peak reached is 9216 bytes (9.00 KiB) (0.75x the unconstrained peak) after recomputing 2 tensors (+0 FLOPs), an arena of 9216 bytes (9.00 KiB) (--max-memory=9216 or 0.75x fits); the largest tensors live at the peak: 't' 4096 bytes (4.00 KiB), 'a' 4096 bytes (4.00 KiB), 'm3' 1024 bytes (1.00 KiB)}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %t = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%x, %t) {kiln.launch_nodes = "t"} : memref<1024xf32>, memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%t, %a) {kiln.launch_nodes = "a"} : memref<1024xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%a, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %m3 = kiln.buffer %ctx : memref<256xf32>
    kiln.launch %ctx @shrink(%m2, %m3) {kiln.launch_nodes = "m3"} : memref<1024xf32>, memref<256xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m3, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<256xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Kept because recomputing would not lower the peak: `a` is made from `big`
// (6 KiB), which `@opaque` writes (no kiln.num_outputs: it cannot be
// recomputed); recomputing `a` alone would keep `big` alive across the peak.
// (The best fit of these ranges needs 14 KiB for a 12 KiB peak.)
module {
  func.func private @opaque(%x: memref<1024xf32>, %o: memref<1536xf32>) {
    return
  }
  func.func private @reduce(%x: memref<1536xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  // expected-error @+1 {{the smallest peak reached is 12288 bytes (12.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 14336 bytes (14.00 KiB) (--max-memory=14336 or 1.17x fits); the largest tensors live at the peak: 'a' 4096 bytes (4.00 KiB), 'm1' 4096 bytes (4.00 KiB), 'm2' 4096 bytes (4.00 KiB)}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %big = kiln.buffer %ctx : memref<1536xf32>
    kiln.launch %ctx @opaque(%x, %big) {kiln.launch_nodes = "big"} : memref<1024xf32>, memref<1536xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @reduce(%big, %a) {kiln.launch_nodes = "a"} : memref<1536xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%a, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m2, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<1024xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// A symbolic input dim: no sizes, no budget.
module {
  // expected-error @+1 {{--max-memory needs static shapes: input 'x' dim 0 ('batch') is symbolic; fix it with --dim batch=N or --shapes x:Nx16}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 ?batch 16\0Aoutput y f32 2 ?batch 16\0A"} {
    %x = kiln.input %ctx [0] : memref<?x16xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// An unnamed symbolic dim is fixed by input and axis.
module {
  // expected-error @+1 {{--max-memory needs static shapes: input 'tokens' dim 1 is symbolic; fix it with --dim tokens:1=N or --shapes tokens:1xN}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input tokens i64 2 1 ?\0A"} {
    %x = kiln.input %ctx [0] : memref<1x?xi64>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Static inputs, but a tensor whose size only the run knows.
module {
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 16\0A"} {
    %x = kiln.input %ctx [0] : memref<16xf32>
    %n = arith.constant 4 : index
    // expected-error @+1 {{--max-memory needs static shapes: this tensor's size 'memref<?xf32>' is only known when the model runs}}
    %b = kiln.buffer %ctx (%n) : memref<?xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Batch chunking refused: the kernel at the peak (t and u, 32 KiB) reads
// row 3 - b for row b, so no chunk of rows computes its own rows; the
// kernels around it are batch-parallel, but a run must contain the peak.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#row3 = affine_map<(d0, d1, d2) -> (d0, d2)>
#revb = affine_map<(d0, d1, d2) -> (-d0 + 3, d1, d2)>
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
  func.func private @reverse(%x: memref<4x4x256xf32>, %o: memref<4x4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x4x256xf32> to tensor<4x4x256xf32>
    %1 = tensor.empty() : tensor<4x4x256xf32>
    %2 = linalg.generic {indexing_maps = [#revb, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<4x4x256xf32>) outs(%1 : tensor<4x4x256xf32>) {
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
  // expected-error @+1 {{the smallest peak reached is 32768 bytes (32.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 32768 bytes (32.00 KiB) (--max-memory=32768 or 1.00x fits); the largest tensors live at the peak: 't' 16384 bytes (16.00 KiB), 'u' 16384 bytes (16.00 KiB)}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 2 4 256\0Aoutput y f32 2 4 256\0A"} {
    %x = kiln.input %ctx [0] : memref<4x256xf32>
    %t = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @expand(%x, %t) {kiln.launch_nodes = "t"} : memref<4x256xf32>, memref<4x4x256xf32>
    %u = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @reverse(%t, %u) {kiln.launch_nodes = "u"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %y = kiln.output %ctx [0] : memref<4x256xf32>
    kiln.launch %ctx @sum(%u, %y) {kiln.launch_nodes = "y"} : memref<4x4x256xf32>, memref<4x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Batch chunking refused: the kernel at the peak folds the batch into its
// rows (collapse_shape [[0, 1], [2]] to 16x256), which a retyped clone
// would compute differently.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#rev2 = affine_map<(d0, d1) -> (-d0 + 15, d1)>
module {
  func.func private @fold(%x: memref<4x4x256xf32>, %o: memref<4x4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x4x256xf32> to tensor<4x4x256xf32>
    %1 = tensor.collapse_shape %0 [[0, 1], [2]] : tensor<4x4x256xf32> into tensor<16x256xf32>
    %2 = tensor.empty() : tensor<16x256xf32>
    %3 = linalg.generic {indexing_maps = [#rev2, #id2], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<16x256xf32>) outs(%2 : tensor<16x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    } -> tensor<16x256xf32>
    %4 = tensor.expand_shape %3 [[0, 1], [2]] output_shape [4, 4, 256] : tensor<16x256xf32> into tensor<4x4x256xf32>
    bufferization.materialize_in_destination %4 in restrict writable %o : (tensor<4x4x256xf32>, memref<4x4x256xf32>) -> ()
    return
  }
  // expected-error @+1 {{the smallest peak reached is 32768 bytes (32.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 32768 bytes}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 3 4 4 256\0Aoutput y f32 3 4 4 256\0A"} {
    %x = kiln.input %ctx [0] : memref<4x4x256xf32>
    %t = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @fold(%x, %t) {kiln.launch_nodes = "t"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %u = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @fold(%t, %u) {kiln.launch_nodes = "u"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %y = kiln.output %ctx [0] : memref<4x4x256xf32>
    kiln.launch %ctx @fold(%u, %y) {kiln.launch_nodes = "y"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// Batch chunking refused: the kernel at the peak uses the batch index as a
// value (row b, reversed, + b), which a chunk would see as its own local
// row number.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#rev3 = affine_map<(d0, d1, d2) -> (d0, d1, -d2 + 255)>
module {
  func.func private @addrow(%x: memref<4x4x256xf32>, %o: memref<4x4x256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    %0 = bufferization.to_tensor %x restrict : memref<4x4x256xf32> to tensor<4x4x256xf32>
    %1 = tensor.empty() : tensor<4x4x256xf32>
    %2 = linalg.generic {indexing_maps = [#rev3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%0 : tensor<4x4x256xf32>) outs(%1 : tensor<4x4x256xf32>) {
    ^bb0(%in: f32, %out: f32):
      %b = linalg.index 0 : index
      %i = arith.index_cast %b : index to i32
      %f = arith.sitofp %i : i32 to f32
      %s = arith.addf %in, %f : f32
      linalg.yield %s : f32
    } -> tensor<4x4x256xf32>
    bufferization.materialize_in_destination %2 in restrict writable %o : (tensor<4x4x256xf32>, memref<4x4x256xf32>) -> ()
    return
  }
  // expected-error @+1 {{the smallest peak reached is 32768 bytes (32.00 KiB) (1.00x the unconstrained peak) after recomputing 0 tensors (+0 FLOPs), an arena of 32768 bytes}}
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 3 4 4 256\0Aoutput y f32 3 4 4 256\0A"} {
    %x = kiln.input %ctx [0] : memref<4x4x256xf32>
    %t = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @addrow(%x, %t) {kiln.launch_nodes = "t"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %u = kiln.buffer %ctx : memref<4x4x256xf32>
    kiln.launch %ctx @addrow(%t, %u) {kiln.launch_nodes = "u"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %y = kiln.output %ctx [0] : memref<4x4x256xf32>
    kiln.launch %ctx @addrow(%u, %y) {kiln.launch_nodes = "y"} : memref<4x4x256xf32>, memref<4x4x256xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
