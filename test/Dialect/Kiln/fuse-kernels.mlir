// RUN: kiln-opt %s -split-input-file --kiln-fuse-kernels | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>

// Matmul + bias + relu: the elementwise kernels are epilogues of the matmul.
// CHECK-LABEL: func @matmul_epilogue
// CHECK: %[[K:.*]] = kiln.kernel "kernel_0"
// CHECK: linalg.matmul
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: kiln.yield
// CHECK-NOT: kiln.kernel
// CHECK: return %[[K]]
func.func @matmul_epilogue(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.kernel "k0" ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    kiln.yield %m : tensor<4x16xf32>
  }
  %1 = kiln.kernel "k1" ins(%0, %b : tensor<4x16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %c: tensor<16xf32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %c : tensor<4x16xf32>, tensor<16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  %2 = kiln.kernel "k2" ins(%1 : tensor<4x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %o: f32):
      %s = arith.maximumf %p, %z : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  return %2 : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>

// A row reduction (over the last dim) and the elementwise op that
// broadcasts it back along the same rows: one kernel (softmax-like).
// CHECK-LABEL: func @row_reduction_fuses
// CHECK: kiln.kernel "kernel_0"
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.subf
// CHECK-NOT: kiln.kernel
func.func @row_reduction_fuses(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.kernel "max" ins(%x : tensor<4x16xf32>) -> (tensor<4x1xf32>) {
  ^bb0(%a: tensor<4x16xf32>):
    %z = arith.constant 0xFF800000 : f32
    %e = tensor.empty() : tensor<4x1xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
    %r = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x16xf32>) outs(%f : tensor<4x1xf32>) {
    ^bb0(%p: f32, %o: f32):
      %m = arith.maximumf %o, %p : f32
      linalg.yield %m : f32
    } -> tensor<4x1xf32>
    kiln.yield %r : tensor<4x1xf32>
  }
  %1 = kiln.kernel "sub" ins(%x, %0 : tensor<4x16xf32>, tensor<4x1xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %m: tensor<4x1xf32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %m : tensor<4x16xf32>, tensor<4x1xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.subf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (0, d1)>

// Must NOT fuse: a reduction over the leading dim feeding a broadcast along
// it (no common rows).
// CHECK-LABEL: func @reduction_broadcast_does_not_fuse
// CHECK: kiln.kernel "kernel_0"
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: kiln.yield
// CHECK: kiln.kernel "kernel_1"
// CHECK: arith.subf
func.func @reduction_broadcast_does_not_fuse(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = kiln.kernel "sum" ins(%x : tensor<4x16xf32>) -> (tensor<1x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<1x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16xf32>) -> tensor<1x16xf32>
    %r = linalg.generic {indexing_maps = [#id, #col], iterator_types = ["reduction", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%f : tensor<1x16xf32>) {
    ^bb0(%p: f32, %o: f32):
      %m = arith.addf %o, %p : f32
      linalg.yield %m : f32
    } -> tensor<1x16xf32>
    kiln.yield %r : tensor<1x16xf32>
  }
  %1 = kiln.kernel "sub" ins(%x, %0 : tensor<4x16xf32>, tensor<1x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %m: tensor<1x16xf32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %m : tensor<4x16xf32>, tensor<1x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.subf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  return %1 : tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Must NOT fuse: an elementwise producer with two expensive consumers (of
// different shapes, so they don't merge horizontally) stays its own kernel:
// it is neither recomputed in each nor merged into one of them.
// CHECK-LABEL: func @shared_producer
// CHECK: %[[P:.*]] = kiln.kernel "kernel_0"
// CHECK: math.exp
// CHECK: kiln.yield
// CHECK: kiln.kernel "kernel_1" ins(%[[P]]
// CHECK-NOT: math.exp
// CHECK: kiln.kernel "kernel_2" ins(%[[P]]
// CHECK-NOT: math.exp
func.func @shared_producer(%x: tensor<4x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>) {
  %0 = kiln.kernel "exp" ins(%x : tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>):
    %e = tensor.empty() : tensor<4x8xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
    ^bb0(%p: f32, %o: f32):
      %s = math.exp %p : f32
      linalg.yield %s : f32
    } -> tensor<4x8xf32>
    kiln.yield %g : tensor<4x8xf32>
  }
  %1 = kiln.kernel "mm1" ins(%0, %w1 : tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x8xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    kiln.yield %m : tensor<4x8xf32>
  }
  %2 = kiln.kernel "mm2" ins(%0, %w2 : tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    kiln.yield %m : tensor<4x16xf32>
  }
  return %1, %2 : tensor<4x8xf32>, tensor<4x16xf32>
}

// -----

// Horizontal: two projections of one input with one shape (Q and K) become
// one kernel with two results; neither reads the other.
// CHECK-LABEL: func @horizontal
// CHECK: %[[M:.*]]:2 = kiln.kernel "kernel_0"
// CHECK-COUNT-2: linalg.matmul
// CHECK: return %[[M]]#0, %[[M]]#1
func.func @horizontal(%x: tensor<4x8xf32>, %wq: tensor<8x8xf32>, %wk: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %1 = kiln.kernel "q" ins(%x, %wq : tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x8xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    kiln.yield %m : tensor<4x8xf32>
  }
  %2 = kiln.kernel "k" ins(%x, %wk : tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x8xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x8xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
    kiln.yield %m : tensor<4x8xf32>
  }
  return %1, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Must NOT fuse: contractions never merge vertically, and the add (reading
// both) can't join the first matmul (k0 → mm2 → add would leave and re-enter
// the kernel): it becomes the epilogue of the second.
// CHECK-LABEL: func @not_convex
// CHECK: kiln.kernel "kernel_0"
// CHECK: linalg.matmul
// CHECK-NOT: linalg.matmul
// CHECK: kiln.yield
// CHECK: kiln.kernel "kernel_1"
// CHECK: linalg.matmul
// CHECK: arith.addf
func.func @not_convex(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = kiln.kernel "mm" ins(%x, %x : tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x4xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
    kiln.yield %m : tensor<4x4xf32>
  }
  %1 = kiln.kernel "mm2" ins(%0, %x : tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x4xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
    %m = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
    kiln.yield %m : tensor<4x4xf32>
  }
  %2 = kiln.kernel "add" ins(%0, %1 : tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>) {
  ^bb0(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>):
    %e = tensor.empty() : tensor<4x4xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e : tensor<4x4xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %s = arith.addf %p, %q : f32
      linalg.yield %s : f32
    } -> tensor<4x4xf32>
    kiln.yield %g : tensor<4x4xf32>
  }
  return %2 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>

// A half product, then the f32 widening of a half normalization's input
// and the row reduction of its statistics: the widening joins the
// reduction (it reads half), not the product as an epilogue (which would
// write the f32 tensor, twice the bytes).
// CHECK-LABEL: func @widening_joins_its_reader
// CHECK: %[[MM:.*]] = kiln.kernel "kernel_0"
// CHECK: linalg.matmul
// CHECK-NOT: arith.extf
// CHECK: kiln.yield {{.*}} : tensor<4x16xf16>
// CHECK: kiln.kernel "kernel_1" ins(%[[MM]] : tensor<4x16xf16>)
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.extf
func.func @widening_joins_its_reader(%x: tensor<4x8xf16>, %w: tensor<8x16xf16>) -> tensor<4x1xf32> {
  %0 = kiln.kernel "mm" ins(%x, %w : tensor<4x8xf16>, tensor<8x16xf16>) -> (tensor<4x16xf16>) {
  ^bb0(%a: tensor<4x8xf16>, %c: tensor<8x16xf16>):
    %z = arith.constant 0.0 : f16
    %e = tensor.empty() : tensor<4x16xf16>
    %f = linalg.fill ins(%z : f16) outs(%e : tensor<4x16xf16>) -> tensor<4x16xf16>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf16>, tensor<8x16xf16>) outs(%f : tensor<4x16xf16>) -> tensor<4x16xf16>
    kiln.yield %m : tensor<4x16xf16>
  }
  %1 = kiln.kernel "widen" ins(%0 : tensor<4x16xf16>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf16>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf16>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f16, %o: f32):
      %x32 = arith.extf %p : f16 to f32
      linalg.yield %x32 : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  %2 = kiln.kernel "sum" ins(%1 : tensor<4x16xf32>) -> (tensor<4x1xf32>) {
  ^bb0(%a: tensor<4x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x1xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
    %r = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x16xf32>) outs(%f : tensor<4x1xf32>) {
    ^bb0(%p: f32, %o: f32):
      %s = arith.addf %o, %p : f32
      linalg.yield %s : f32
    } -> tensor<4x1xf32>
    kiln.yield %r : tensor<4x1xf32>
  }
  return %2 : tensor<4x1xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#sc = affine_map<(d0, d1) -> ()>

// A quantized residual stream: a block's end (a product and its
// quantization) writes its value as uint8, which the next block's product
// and its residual Add read; the Add's dequantization (u8 -> f32, a
// scalar scale) joins the next block's kernel, reading the uint8 tensor,
// not the first block's as an epilogue (which would write the f32 tensor
// beside the uint8 one).
// CHECK-LABEL: func @dequantize_joins_its_reader
// CHECK: %[[Q:.*]] = kiln.kernel "kernel_0"
// CHECK: linalg.matmul
// CHECK-NOT: arith.uitofp
// CHECK: kiln.yield {{.*}} : tensor<4x16xi8>
// CHECK: kiln.kernel "kernel_1" ins({{.*}}%[[Q]]{{.*}})
// CHECK: linalg.matmul
// CHECK: arith.uitofp
// CHECK: arith.addf
func.func @dequantize_joins_its_reader(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>, %v: tensor<4x16xf32>, %w2: tensor<16x16xf32>, %s: tensor<f32>) -> (tensor<4x16xi8>, tensor<4x16xf32>) {
  %0 = kiln.kernel "mm" ins(%x, %w : tensor<4x8xf32>, tensor<8x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x8xf32>, tensor<8x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    kiln.yield %m : tensor<4x16xf32>
  }
  %1 = kiln.kernel "q" ins(%0 : tensor<4x16xf32>) -> (tensor<4x16xi8>) {
  ^bb0(%a: tensor<4x16xf32>):
    %e = tensor.empty() : tensor<4x16xi8>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<4x16xf32>) outs(%e : tensor<4x16xi8>) {
    ^bb0(%p: f32, %o: i8):
      %i = arith.fptoui %p : f32 to i8
      linalg.yield %i : i8
    } -> tensor<4x16xi8>
    kiln.yield %g : tensor<4x16xi8>
  }
  %2 = kiln.kernel "dq" ins(%1, %s : tensor<4x16xi8>, tensor<f32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xi8>, %sc: tensor<f32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %sc : tensor<4x16xi8>, tensor<f32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: i8, %k: f32, %o: f32):
      %f = arith.uitofp %p : i8 to f32
      %m = arith.mulf %f, %k : f32
      linalg.yield %m : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  %3 = kiln.kernel "mm2" ins(%v, %w2 : tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %c: tensor<16x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x16xf32>, tensor<16x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    kiln.yield %m : tensor<4x16xf32>
  }
  %4 = kiln.kernel "add" ins(%3, %2 : tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.addf %p, %q : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  return %1, %4 : tensor<4x16xi8>, tensor<4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0, 0)>
#sc = affine_map<(d0, d1) -> ()>

// A normalization quantized for the next product (BERT's int8 LayerNorms):
// its rows end in a uint8 tensor, whose dequantization a residual Add
// reads. The dequantization joins the Add's kernel, reading the uint8
// tensor, not the normalization's by rows (which would write the f32
// tensor beside the uint8 one, as an epilogue would).
// CHECK-LABEL: func @dequantize_skips_the_rows
// CHECK: %[[Q:.*]] = kiln.kernel "kernel_0"
// CHECK: iterator_types = ["parallel", "reduction"]
// CHECK: arith.fptoui
// CHECK-NOT: arith.uitofp
// CHECK: kiln.yield {{.*}} : tensor<4x16xi8>
// CHECK: kiln.kernel "kernel_1" ins({{.*}}%[[Q]]{{.*}})
// CHECK: linalg.matmul
// CHECK: arith.uitofp
// CHECK: arith.addf
func.func @dequantize_skips_the_rows(%x: tensor<4x16xf32>, %v: tensor<4x16xf32>, %w2: tensor<16x16xf32>, %s: tensor<f32>) -> (tensor<4x16xi8>, tensor<4x16xf32>) {
  %0 = kiln.kernel "norm" ins(%x : tensor<4x16xf32>) -> (tensor<4x16xi8>) {
  ^bb0(%a: tensor<4x16xf32>):
    %z = arith.constant 0.0 : f32
    %e1 = tensor.empty() : tensor<4x1xf32>
    %f = linalg.fill ins(%z : f32) outs(%e1 : tensor<4x1xf32>) -> tensor<4x1xf32>
    %r = linalg.generic {indexing_maps = [#id, #red], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x16xf32>) outs(%f : tensor<4x1xf32>) {
    ^bb0(%p: f32, %o: f32):
      %t = arith.addf %o, %p : f32
      linalg.yield %t : f32
    } -> tensor<4x1xf32>
    %e = tensor.empty() : tensor<4x16xi8>
    %g = linalg.generic {indexing_maps = [#id, #red, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %r : tensor<4x16xf32>, tensor<4x1xf32>) outs(%e : tensor<4x16xi8>) {
    ^bb0(%p: f32, %m: f32, %o: i8):
      %d = arith.subf %p, %m : f32
      %i = arith.fptoui %d : f32 to i8
      linalg.yield %i : i8
    } -> tensor<4x16xi8>
    kiln.yield %g : tensor<4x16xi8>
  }
  %1 = kiln.kernel "dq" ins(%0, %s : tensor<4x16xi8>, tensor<f32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xi8>, %sc: tensor<f32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #sc, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %sc : tensor<4x16xi8>, tensor<f32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: i8, %k: f32, %o: f32):
      %f = arith.uitofp %p : i8 to f32
      %m = arith.mulf %f, %k : f32
      linalg.yield %m : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  %2 = kiln.kernel "mm2" ins(%v, %w2 : tensor<4x16xf32>, tensor<16x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %c: tensor<16x16xf32>):
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<4x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
    %m = linalg.matmul ins(%a, %c : tensor<4x16xf32>, tensor<16x16xf32>) outs(%f : tensor<4x16xf32>) -> tensor<4x16xf32>
    kiln.yield %m : tensor<4x16xf32>
  }
  %3 = kiln.kernel "add" ins(%2, %1 : tensor<4x16xf32>, tensor<4x16xf32>) -> (tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>, %b: tensor<4x16xf32>):
    %e = tensor.empty() : tensor<4x16xf32>
    %g = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%a, %b : tensor<4x16xf32>, tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) {
    ^bb0(%p: f32, %q: f32, %o: f32):
      %r = arith.addf %p, %q : f32
      linalg.yield %r : f32
    } -> tensor<4x16xf32>
    kiln.yield %g : tensor<4x16xf32>
  }
  return %0, %3 : tensor<4x16xi8>, tensor<4x16xf32>
}
