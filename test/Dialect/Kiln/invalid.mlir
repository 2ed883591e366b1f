// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @wrong_block_args(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{expects 1 block arguments, one per input, got 0}}
  %r = kiln.kernel ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
    %c = arith.constant dense<1.0> : tensor<4xf32>
    kiln.yield %c : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// -----

func.func @wrong_dims(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{expects 1 dynamic result sizes, got 0}}
  %r = kiln.kernel ins(%x : tensor<?xf32>) -> (tensor<?xf32>) {
  ^bb0(%a: tensor<?xf32>):
    kiln.yield %a : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

func.func @wrong_yield(%x: tensor<4xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{yielded types do not match the result types}}
  %r = kiln.kernel ins(%x : tensor<4xf32>) -> (tensor<4xi32>) {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xi32>
}

// -----

func.func @output_sizes(%ctx: !llvm.ptr) {
  // expected-error @+1 {{expects 1 dynamic sizes for 'memref<?x8xf32>', got 0}}
  %y = kiln.output %ctx [0] : memref<?x8xf32>
  return
}

// -----

func.func @offset_dynamic(%ctx: !llvm.ptr, %n: index) {
  // expected-error @+1 {{an arena offset needs a static shape}}
  %y = kiln.buffer %ctx (%n) {offset = 0} : memref<?x8xf32>
  return
}

// -----

func.func @launch_missing(%ctx: !llvm.ptr, %m: memref<4xf32>) {
  // expected-error @+1 {{kernel 'nope' is not a function}}
  kiln.launch %ctx @nope(%m) : memref<4xf32>
  return
}

// -----

func.func private @k(memref<4xf32>)
func.func @launch_types(%ctx: !llvm.ptr, %m: memref<8xf32>) {
  // expected-error @+1 {{argument types do not match kernel 'k'}}
  kiln.launch %ctx @k(%m) : memref<8xf32>
  return
}

// -----

func.func @attention_heads(%q: tensor<1x3x8x16xf16>, %k: tensor<1x2x8x16xf16>, %o: tensor<1x3x8x16xf16>) -> tensor<1x3x8x16xf16> {
  // expected-error @+1 {{the query heads (3) must be a multiple of the key/value heads (2)}}
  %0 = kiln.attention ins(%q, %k, %k : tensor<1x3x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>) outs(%o : tensor<1x3x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] -> tensor<1x3x8x16xf16>
  return %0 : tensor<1x3x8x16xf16>
}

// -----

func.func @attention_shapes(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x32xf16>, %o: tensor<1x2x8x32xf16>) -> tensor<1x2x8x32xf16> {
  // expected-error @+1 {{operand shapes disagree}}
  %0 = kiln.attention ins(%q, %k, %k : tensor<1x2x8x16xf16>, tensor<1x2x8x32xf16>, tensor<1x2x8x32xf16>) outs(%o : tensor<1x2x8x32xf16>) scale = 1.0 seq_major = [false, false, false, false] -> tensor<1x2x8x32xf16>
  return %0 : tensor<1x2x8x32xf16>
}

// -----

func.func @attention_mask(%q: tensor<1x2x8x16xf16>, %m: tensor<1x3x8x8xf32>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{mask dim 1 must be 1 or 2, not 3}}
  %0 = kiln.attention ins(%q, %q, %q, mask %m : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf16>, tensor<1x3x8x8xf32>) outs(%q : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}

// -----

func.func @attention_types(%q: tensor<1x2x8x16xf16>, %k: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{query, key and value must have one float type}}
  %0 = kiln.attention ins(%q, %k, %k : tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) outs(%q : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}

// -----

func.func @release_arena(%ctx: !llvm.ptr) {
  %t = kiln.buffer %ctx {offset = 64} : memref<4x8xf32>
  // expected-error @+1 {{cannot release an arena buffer (it has an offset)}}
  kiln.release %ctx, %t : memref<4x8xf32>
  return
}

// -----

func.func @release_view(%ctx: !llvm.ptr, %n: index) {
  %t = kiln.buffer %ctx (%n) : memref<?x8xf32>
  %v = memref.subview %t[0, 0] [2, 8] [1, 1] : memref<?x8xf32> to memref<2x8xf32, strided<[8, 1]>>
  // expected-error @+1 {{releases a kiln.buffer result, not a view of one}}
  kiln.release %ctx, %v : memref<2x8xf32, strided<[8, 1]>>
  return
}

// -----

func.func @attention_int_without_dequant(%q: tensor<1x2x8x16xi8>, %o: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{dequant scales, zero points and unsigned flags are given exactly when an operand is an integer}}
  %0 = kiln.attention ins(%q, %q, %q : tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>) outs(%o : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}

// -----

func.func @attention_int_zero_point(%q: tensor<1x2x8x16xi8>, %o: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{key's zero point 200 is out of its type's range}}
  %0 = kiln.attention ins(%q, %q, %q : tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>) outs(%o : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] dequant(scales = [1.0, 1.0, 1.0], zero_points = [0, 200, 0], unsigned = [true, false, false]) -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}

// -----

func.func @attention_float_dequant(%q: tensor<1x2x8x16xi8>, %v: tensor<1x2x8x16xf16>, %o: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{the float value has dequant entries other than 1, 0, false}}
  %0 = kiln.attention ins(%q, %q, %v : tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf16>) outs(%o : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] dequant(scales = [1.0, 1.0, 0.5], zero_points = [0, 0, 0], unsigned = [false, false, false]) -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}

// -----

func.func @attention_int_width(%q: tensor<1x2x8x16xi16>, %o: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{query must be of a float type or signless i8, not 'i16'}}
  %0 = kiln.attention ins(%q, %q, %q : tensor<1x2x8x16xi16>, tensor<1x2x8x16xi16>, tensor<1x2x8x16xi16>) outs(%o : tensor<1x2x8x16xf16>) scale = 1.0 seq_major = [false, false, false, false] dequant(scales = [1.0, 1.0, 1.0], zero_points = [0, 0, 0], unsigned = [false, false, false]) -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}
