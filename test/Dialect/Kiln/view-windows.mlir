// RUN: kiln-opt %s -split-input-file --kiln-view-windows | FileCheck %s

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// BERT's Q, K and V: three window copies of the QKV projection (a Split on
// the last axis, indices clamped into the source) feed the fused attention
// through host reshapes. The attention kernel reads the projection once,
// through three strided views; the copies and reshapes go.
// CHECK-LABEL: func @split_qkv
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x48xf16>)
// CHECK-NOT: linalg.generic
// CHECK: kiln.kernel "attn" ins(%[[X]] : tensor<2x8x48xf16>)
// CHECK: ^bb0(%[[A:.*]]: tensor<2x8x48xf16>):
// CHECK-DAG: %[[Q:.*]] = tensor.extract_slice %[[A]][0, 0, 0] [2, 8, 16] [1, 1, 1]
// CHECK-DAG: %[[K:.*]] = tensor.extract_slice %[[A]][0, 0, 16] [2, 8, 16] [1, 1, 1]
// CHECK-DAG: %[[V:.*]] = tensor.extract_slice %[[A]][0, 0, 32] [2, 8, 16] [1, 1, 1]
// CHECK-DAG: %[[QE:.*]] = tensor.expand_shape %[[Q]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 8]
// CHECK-DAG: %[[KE:.*]] = tensor.expand_shape %[[K]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 8]
// CHECK-DAG: %[[VE:.*]] = tensor.expand_shape %[[V]] {{\[}}[0], [1], [2, 3]] output_shape [2, 8, 2, 8]
// CHECK: kiln.attention ins(%[[QE]], %[[KE]], %[[VE]] :
// CHECK-NOT: kiln.kernel
func.func @split_qkv(%x: tensor<2x8x48xf16>) -> tensor<2x8x2x8xf16> {
  %q = kiln.kernel "copy_q" ins(%x : tensor<2x8x48xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x48xf16>):
    %c0 = arith.constant 0 : index
    %c47 = arith.constant 47 : index
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%out: f16):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %lo = arith.minsi %l, %c47 : index
      %c = arith.maxsi %lo, %c0 : index
      %v = tensor.extract %a[%i, %j, %c] : tensor<2x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  %k = kiln.kernel "copy_k" ins(%x : tensor<2x8x48xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x48xf16>):
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c47 = arith.constant 47 : index
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%out: f16):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c16 : index
      %lo = arith.minsi %s, %c47 : index
      %c = arith.maxsi %lo, %c0 : index
      %v = tensor.extract %a[%i, %j, %c] : tensor<2x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  %v = kiln.kernel "copy_v" ins(%x : tensor<2x8x48xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x48xf16>):
    %c32 = arith.constant 32 : index
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%out: f16):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c32 : index
      %v = tensor.extract %a[%i, %j, %s] : tensor<2x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  %shape = arith.constant dense<[2, 8, 2, 8]> : tensor<4xindex>
  %q4 = tensor.reshape %q(%shape) : (tensor<2x8x16xf16>, tensor<4xindex>) -> tensor<2x8x2x8xf16>
  %k4 = tensor.reshape %k(%shape) : (tensor<2x8x16xf16>, tensor<4xindex>) -> tensor<2x8x2x8xf16>
  %v4 = tensor.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xf16> into tensor<2x8x2x8xf16>
  %y = kiln.kernel "attn" ins(%q4, %k4, %v4 : tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>) -> (tensor<2x8x2x8xf16>) {
  ^bb0(%a: tensor<2x8x2x8xf16>, %b: tensor<2x8x2x8xf16>, %c: tensor<2x8x2x8xf16>):
    %e = tensor.empty() : tensor<2x8x2x8xf16>
    %r = kiln.attention ins(%a, %b, %c : tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>) outs(%e : tensor<2x8x2x8xf16>) scale = 0.35355339059327373 seq_major = [true, true, true, true] -> tensor<2x8x2x8xf16>
    kiln.yield %r : tensor<2x8x2x8xf16>
  }
  return %y : tensor<2x8x2x8xf16>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Not a window: a clamp that binds (the index runs past the source and is
// held at its last element), a copy another kernel also reads (it stays,
// and the attention still takes the view), and an operand the kernel does
// not read in place.
// CHECK-LABEL: func @not_windows
// CHECK: %[[CLAMPED:.*]] = kiln.kernel "clamped"
// CHECK: %[[SHARED:.*]] = kiln.kernel "shared"
// CHECK: %[[R:.*]] = tensor.reshape %[[CLAMPED]]
// CHECK: kiln.kernel "attn" ins(%[[R]], %arg0 :
// CHECK: kiln.kernel "other" ins(%[[SHARED]] :
func.func @not_windows(%x: tensor<2x8x48xf16>) -> (tensor<2x8x2x8xf16>, tensor<2x8x16xf16>) {
  %q = kiln.kernel "clamped" ins(%x : tensor<2x8x48xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x48xf16>):
    %c40 = arith.constant 40 : index
    %c47 = arith.constant 47 : index
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%out: f16):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c40 : index
      %c = arith.minsi %s, %c47 : index
      %v = tensor.extract %a[%i, %j, %c] : tensor<2x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  %k = kiln.kernel "shared" ins(%x : tensor<2x8x48xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x48xf16>):
    %c16 = arith.constant 16 : index
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%out: f16):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c16 : index
      %v = tensor.extract %a[%i, %j, %s] : tensor<2x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  %shape = arith.constant dense<[2, 8, 2, 8]> : tensor<4xindex>
  %q4 = tensor.reshape %q(%shape) : (tensor<2x8x16xf16>, tensor<4xindex>) -> tensor<2x8x2x8xf16>
  %k4 = tensor.reshape %k(%shape) : (tensor<2x8x16xf16>, tensor<4xindex>) -> tensor<2x8x2x8xf16>
  %y = kiln.kernel "attn" ins(%q4, %k4 : tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>) -> (tensor<2x8x2x8xf16>) {
  ^bb0(%a: tensor<2x8x2x8xf16>, %b: tensor<2x8x2x8xf16>):
    %e = tensor.empty() : tensor<2x8x2x8xf16>
    %r = kiln.attention ins(%a, %b, %b : tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>, tensor<2x8x2x8xf16>) outs(%e : tensor<2x8x2x8xf16>) scale = 0.35355339059327373 seq_major = [true, true, true, true] -> tensor<2x8x2x8xf16>
    kiln.yield %r : tensor<2x8x2x8xf16>
  }
  %o = kiln.kernel "other" ins(%k : tensor<2x8x16xf16>) -> (tensor<2x8x16xf16>) {
  ^bb0(%a: tensor<2x8x16xf16>):
    %e = tensor.empty() : tensor<2x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%a : tensor<2x8x16xf16>) outs(%e : tensor<2x8x16xf16>) {
    ^bb0(%in: f16, %out: f16):
      %n = arith.negf %in : f16
      linalg.yield %n : f16
    } -> tensor<2x8x16xf16>
    kiln.yield %g : tensor<2x8x16xf16>
  }
  return %y, %o : tensor<2x8x2x8xf16>, tensor<2x8x16xf16>
}

// -----

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// Batch 1: the copy's batch index folded to a constant.
// CHECK-LABEL: func @batch_one
// CHECK: kiln.kernel "attn" ins(%arg0 : tensor<1x8x48xf16>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 16] [1, 8, 16] [1, 1, 1]
func.func @batch_one(%x: tensor<1x8x48xf16>) -> tensor<1x8x2x8xf16> {
  %k = kiln.kernel "copy_k" ins(%x : tensor<1x8x48xf16>) -> (tensor<1x8x16xf16>) {
  ^bb0(%a: tensor<1x8x48xf16>):
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %e = tensor.empty() : tensor<1x8x16xf16>
    %g = linalg.generic {indexing_maps = [#id], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<1x8x16xf16>) {
    ^bb0(%out: f16):
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c16 : index
      %v = tensor.extract %a[%c0, %j, %s] : tensor<1x8x48xf16>
      linalg.yield %v : f16
    } -> tensor<1x8x16xf16>
    kiln.yield %g : tensor<1x8x16xf16>
  }
  %k4 = tensor.expand_shape %k [[0], [1], [2, 3]] output_shape [1, 8, 2, 8] : tensor<1x8x16xf16> into tensor<1x8x2x8xf16>
  %y = kiln.kernel "attn" ins(%k4 : tensor<1x8x2x8xf16>) -> (tensor<1x8x2x8xf16>) {
  ^bb0(%b: tensor<1x8x2x8xf16>):
    %e = tensor.empty() : tensor<1x8x2x8xf16>
    %r = kiln.attention ins(%b, %b, %b : tensor<1x8x2x8xf16>, tensor<1x8x2x8xf16>, tensor<1x8x2x8xf16>) outs(%e : tensor<1x8x2x8xf16>) scale = 0.35355339059327373 seq_major = [true, true, true, true] -> tensor<1x8x2x8xf16>
    kiln.yield %r : tensor<1x8x2x8xf16>
  }
  return %y : tensor<1x8x2x8xf16>
}

// -----

// An int8 build's quantized QKV: the window copy is of the uint8 tensor and
// the attention reads its signless bitcast. The kernel takes the bitcast of
// the whole source and views it; copy and bitcast go.
// CHECK-LABEL: func @unsigned_window
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x48xui8>)
// CHECK: %[[B:.*]] = tensor.bitcast %[[X]] : tensor<2x8x48xui8> to tensor<2x8x48xi8>
// CHECK: kiln.kernel "attn" ins(%[[B]] : tensor<2x8x48xi8>)
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 16] [2, 8, 16] [1, 1, 1] : tensor<2x8x48xi8> to tensor<2x8x16xi8>
// CHECK: kiln.attention
// CHECK-NOT: linalg.generic
#id2 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @unsigned_window(%x: tensor<2x8x48xui8>) -> tensor<2x8x2x8xf16> {
  %k = kiln.kernel "copy_k" ins(%x : tensor<2x8x48xui8>) -> (tensor<2x8x16xui8>) {
  ^bb0(%a: tensor<2x8x48xui8>):
    %c0 = arith.constant 0 : index
    %c16 = arith.constant 16 : index
    %c47 = arith.constant 47 : index
    %e = tensor.empty() : tensor<2x8x16xui8>
    %g = linalg.generic {indexing_maps = [#id2], iterator_types = ["parallel", "parallel", "parallel"]} outs(%e : tensor<2x8x16xui8>) {
    ^bb0(%out: ui8):
      %i = linalg.index 0 : index
      %j = linalg.index 1 : index
      %l = linalg.index 2 : index
      %s = arith.addi %l, %c16 : index
      %lo = arith.minsi %s, %c47 : index
      %c = arith.maxsi %lo, %c0 : index
      %v = tensor.extract %a[%i, %j, %c] : tensor<2x8x48xui8>
      linalg.yield %v : ui8
    } -> tensor<2x8x16xui8>
    kiln.yield %g : tensor<2x8x16xui8>
  }
  %kb = tensor.bitcast %k : tensor<2x8x16xui8> to tensor<2x8x16xi8>
  %k4 = tensor.expand_shape %kb [[0], [1], [2, 3]] output_shape [2, 8, 2, 8] : tensor<2x8x16xi8> into tensor<2x8x2x8xi8>
  %y = kiln.kernel "attn" ins(%k4 : tensor<2x8x2x8xi8>) -> (tensor<2x8x2x8xf16>) {
  ^bb0(%a: tensor<2x8x2x8xi8>):
    %e = tensor.empty() : tensor<2x8x2x8xf16>
    %r = kiln.attention ins(%a, %a, %a : tensor<2x8x2x8xi8>, tensor<2x8x2x8xi8>, tensor<2x8x2x8xi8>) outs(%e : tensor<2x8x2x8xf16>) scale = 0.35 seq_major = [true, true, true, true] dequant(scales = [0.5, 0.5, 0.5], zero_points = [128, 128, 128], unsigned = [true, true, true]) -> tensor<2x8x2x8xf16>
    kiln.yield %r : tensor<2x8x2x8xf16>
  }
  return %y : tensor<2x8x2x8xf16>
}
