// RUN: kiln-opt %s --kiln-half-division | FileCheck %s
// RUN: kiln-opt %s --kiln-half-division=f32=true | FileCheck %s --check-prefix=F32

// GELU's x / sqrt(2) in half: a product by the f32 reciprocal
// (1 / 1.41406 = 0.707182...), rounded to f16 as the division was.
// CHECK-LABEL: func.func @gelu_div
// CHECK: %[[W:.*]] = arith.extf %{{.*}} : f16 to f32
// CHECK: %[[R:.*]] = arith.constant 0.707182{{[0-9]*}} : f32
// CHECK: %[[P:.*]] = arith.mulf %[[W]], %[[R]] : f32
// CHECK: %[[H:.*]] = arith.truncf %[[P]] : f32 to f16
// CHECK-NOT: arith.divf
// CHECK: math.erf
func.func @gelu_div(%x: f16) -> f32 {
  %c = arith.constant 1.414060e+00 : f16
  %d = arith.divf %x, %c : f16
  %e = arith.extf %d : f16 to f32
  %r = math.erf %e : f32
  return %r : f32
}

// bf16 too, inside a linalg body.
// CHECK-LABEL: func.func @bf16_body
// CHECK: linalg.generic
// CHECK: arith.constant 2.500000e-01 : f32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.divf
func.func @bf16_body(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %c = arith.constant 4.0e+00 : bf16
  %init = tensor.empty() : tensor<8xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%x : tensor<8xbf16>) outs(%init : tensor<8xbf16>) {
  ^bb0(%a: bf16, %o: bf16):
    %q = arith.divf %a, %c : bf16
    linalg.yield %q : bf16
  } -> tensor<8xbf16>
  return %y : tensor<8xbf16>
}

// Left as they are: f32, a variable divisor, a zero divisor.
// CHECK-LABEL: func.func @kept
// CHECK: arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: arith.divf %{{.*}}, %{{.*}} : f16
// CHECK: arith.divf %{{.*}}, %{{.*}} : f16
// CHECK-NOT: arith.mulf
func.func @kept(%x: f32, %h: f16, %v: f16) -> (f32, f16, f16) {
  %c = arith.constant 3.0 : f32
  %z = arith.constant 0.0 : f16
  %a = arith.divf %x, %c : f32
  %b = arith.divf %h, %v : f16
  %d = arith.divf %h, %z : f16
  return %a, %b, %d : f32, f16, f16
}

// With f32 (kilnc --f32-constant-division): an f32 division by a constant
// is the product by the correctly rounded reciprocal (1 / 3 = 0.333333343),
// its exact residual and one correction, q0 kept where it is infinite. A
// variable divisor, a zero one and the halves are as without it.
// F32-LABEL: func.func @kept
// F32-DAG: %[[C:.*]] = arith.constant 3.000000e+00 : f32
// F32-DAG: %[[R:.*]] = arith.constant 0.333333343 : f32
// F32: %[[Q0:.*]] = arith.mulf %[[X:.*]], %[[R]] : f32
// F32: %[[N:.*]] = arith.negf %[[Q0]] : f32
// F32: %[[E:.*]] = math.fma %[[N]], %[[C]], %[[X]] : f32
// F32: %[[Q1:.*]] = math.fma %[[E]], %[[R]], %[[Q0]] : f32
// F32: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// F32: %[[A:.*]] = math.absf %[[Q0]] : f32
// F32: %[[I:.*]] = arith.cmpf oeq, %[[A]], %[[INF]] : f32
// F32: %[[Q:.*]] = arith.select %[[I]], %[[Q0]], %[[Q1]] : f32
// F32-NOT: arith.divf %{{.*}} : f32
// F32: arith.divf %{{.*}}, %{{.*}} : f16
// F32: arith.divf %{{.*}}, %{{.*}} : f16
// F32: return %[[Q]],

// Not rewritten with f32 either: a divisor whose reciprocal is not a normal
// float (1e-39, subnormal: 1e39 is past the float range), 0 and a variable.
// F32-LABEL: func.func @f32_kept
// F32: arith.divf %{{.*}}, %{{.*}} : f32
// F32: arith.divf %{{.*}}, %{{.*}} : f32
// F32: arith.divf %{{.*}}, %{{.*}} : f32
// F32-NOT: math.fma
func.func @f32_kept(%x: f32, %y: f32) -> (f32, f32, f32) {
  %tiny = arith.constant 1.0e-39 : f32
  %zero = arith.constant 0.0 : f32
  %a = arith.divf %x, %tiny : f32
  %b = arith.divf %x, %zero : f32
  %c = arith.divf %x, %y : f32
  return %a, %b, %c : f32, f32, f32
}

// A QuantizeLinear's round(x / scale): the correction without the option,
// since every use rounds the quotient to an integer (the same integer for
// every x). A second, unrounded use keeps the division.
// CHECK-LABEL: func.func @quantize
// F32-LABEL: func.func @quantize
// CHECK: %[[Q0:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: math.fma
// CHECK: %[[Q1:.*]] = math.fma %{{.*}}, %{{.*}}, %[[Q0]] : f32
// CHECK: %[[Q:.*]] = arith.select %{{.*}}, %[[Q0]], %[[Q1]] : f32
// CHECK: math.roundeven %[[Q]] : f32
// CHECK: %[[D:.*]] = arith.divf %{{.*}}, %{{.*}} : f32
// CHECK: math.roundeven %[[D]] : f32
// CHECK: arith.addf %[[D]], %[[D]] : f32
func.func @quantize(%x: f32) -> (f32, f32, f32) {
  %s = arith.constant 0.0235294 : f32
  %q = arith.divf %x, %s : f32
  %r = math.roundeven %q : f32
  %s2 = arith.constant 0.05 : f32
  %d = arith.divf %x, %s2 : f32
  %r2 = math.roundeven %d : f32
  %e = arith.addf %d, %d : f32
  return %r, %r2, %e : f32, f32, f32
}
