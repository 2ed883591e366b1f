// RUN: kiln-opt %s --split-input-file | kiln-opt --split-input-file | FileCheck %s
// RUN: kiln-opt %s --split-input-file --one-shot-bufferize | FileCheck %s --check-prefix=BUF

// kiln.attention round-trips on tensors and memrefs, and bufferizes
// destination style: it writes its init's buffer (here a new one: a
// function argument is read-only), which it never reads, so nothing is
// copied into it.

// CHECK-LABEL: func @tensors
// CHECK: kiln.attention ins(%arg0, %arg1, %arg2, mask %arg3 : tensor<2x64x4x32xf16>, tensor<2x80x2x32xf16>, tensor<2x80x2x32xf16>, tensor<1x1x64x80xf32>) outs(%arg4 : tensor<2x4x64x32xf16>) scale = 1.250000e-01 causal seq_major = [true, true, true, false] -> tensor<2x4x64x32xf16>
// BUF-LABEL: func @tensors
// BUF-NOT: memref.copy
// BUF: kiln.attention ins(%{{.*}}, %{{.*}}, %{{.*}}, mask %{{.*}} : memref<2x64x4x32xf16, strided<[?, ?, ?, ?], offset: ?>>, {{.*}}) outs(%[[OUT:.*]] : memref<2x4x64x32xf16>) scale = 1.250000e-01 causal seq_major = [true, true, true, false]{{$}}
// BUF: bufferization.to_tensor %[[OUT]]
func.func @tensors(%q: tensor<2x64x4x32xf16>, %k: tensor<2x80x2x32xf16>, %v: tensor<2x80x2x32xf16>, %m: tensor<1x1x64x80xf32>, %init: tensor<2x4x64x32xf16>) -> tensor<2x4x64x32xf16> {
  %0 = kiln.attention ins(%q, %k, %v, mask %m : tensor<2x64x4x32xf16>, tensor<2x80x2x32xf16>, tensor<2x80x2x32xf16>, tensor<1x1x64x80xf32>) outs(%init : tensor<2x4x64x32xf16>) scale = 0.125 causal seq_major = [true, true, true, false] -> tensor<2x4x64x32xf16>
  return %0 : tensor<2x4x64x32xf16>
}

// -----

// CHECK-LABEL: func @memrefs
// CHECK: kiln.attention ins(%arg0, %arg1, %arg2 : memref<1x2x16x64xbf16>, memref<1x2x16x64xbf16>, memref<1x2x16x64xbf16>) outs(%arg3 : memref<1x2x16x64xbf16>) scale = 5.000000e-01 seq_major = [false, false, false, false]{{$}}
func.func @memrefs(%q: memref<1x2x16x64xbf16>, %k: memref<1x2x16x64xbf16>, %v: memref<1x2x16x64xbf16>, %o: memref<1x2x16x64xbf16>) {
  kiln.attention ins(%q, %k, %v : memref<1x2x16x64xbf16>, memref<1x2x16x64xbf16>, memref<1x2x16x64xbf16>) outs(%o : memref<1x2x16x64xbf16>) scale = 0.5 seq_major = [false, false, false, false]
  return
}

// -----

// 8-bit operands with their dequantization (a float V keeps 1, 0, false);
// bufferization keeps the parameters.
// CHECK-LABEL: func @quantized
// CHECK: kiln.attention ins(%arg0, %arg0, %arg1 : tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf16>) outs(%arg2 : tensor<1x2x8x16xf16>) scale = 2.500000e-01 seq_major = [false, false, false, false] dequant(scales = [5.000000e-01, 5.000000e-01, 1.000000e+00], zero_points = [128, 128, 0], unsigned = [true, true, false]) -> tensor<1x2x8x16xf16>
// BUF-LABEL: func @quantized
// BUF: kiln.attention ins({{.*}} : memref<1x2x8x16xi8, {{.*}}>, memref<1x2x8x16xi8, {{.*}}>, memref<1x2x8x16xf16, {{.*}}>) outs({{.*}}) scale = 2.500000e-01 seq_major = [false, false, false, false] dequant(scales = [5.000000e-01, 5.000000e-01, 1.000000e+00], zero_points = [128, 128, 0], unsigned = [true, true, false]){{$}}
func.func @quantized(%qk: tensor<1x2x8x16xi8>, %v: tensor<1x2x8x16xf16>, %init: tensor<1x2x8x16xf16>) -> tensor<1x2x8x16xf16> {
  %0 = kiln.attention ins(%qk, %qk, %v : tensor<1x2x8x16xi8>, tensor<1x2x8x16xi8>, tensor<1x2x8x16xf16>) outs(%init : tensor<1x2x8x16xf16>) scale = 0.25 seq_major = [false, false, false, false] dequant(scales = [0.5, 0.5, 1.0], zero_points = [128, 128, 0], unsigned = [true, true, false]) -> tensor<1x2x8x16xf16>
  return %0 : tensor<1x2x8x16xf16>
}
