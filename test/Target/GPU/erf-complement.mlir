// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-erf-complement))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(kiln-erf-complement, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// 1 + erf(y) (either operand order) becomes erfc(-y) in one range:
// |y| clamped to 3.9, the polynomial (8 FMAs), 2^-g, 0 past 3.9, and
// 2 - u for y >= 0. The vendor's erf (two ranges, selected coefficients, a
// branch to the outer range's exponential) is gone from the PTX. y = x *
// 0.7071 read by the erf alone: the polynomial takes |x| (the bound 3.9 /
// 0.7071 = 5.5154), its coefficients scaled (the first 1.6279 * 0.7071 =
// 1.1511), and the product goes away.
// GELU as c * x * (1 + erf(x * 0.7071)), in the exporters' groupings:
// 2c max(x, 0) - |x| (c e), c e = 2^(log2 c - g) with log2 c in the last
// FMA, and 2c max(x, 0) past the bound. PyTorch's (x * (1 + erf)) * 0.5:
// c = 0.5, the FMA adds -1, no product by 2c = 1.
// CHECK-LABEL: gpu.func @gelu
// CHECK-DAG: %[[BOUND:.*]] = arith.constant 5.51543{{[0-9]*}} : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 1.15110{{[0-9]*}} : f32
// CHECK-DAG: %[[M1:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NOT: math.erf
// CHECK: %[[X:.*]] = memref.load
// CHECK: %[[T:.*]] = math.absf %[[X]] : f32
// CHECK: %[[C:.*]] = arith.minimumf %[[T]], %[[BOUND]] : f32
// CHECK-COUNT-6: math.fma %{{.*}}, %[[C]], %{{.*}} : f32
// CHECK: %[[P:.*]] = math.fma %{{.*}}, %[[C]], %[[C0]] : f32
// CHECK: %[[NC:.*]] = arith.negf %[[C]] : f32
// CHECK: %[[G:.*]] = math.fma %[[P]], %[[NC]], %[[M1]] : f32
// CHECK: %[[U:.*]] = math.exp2 %[[G]] {kiln.exp2_normal} : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[X]], %[[ZERO]] : f32
// CHECK: %[[NT:.*]] = arith.negf %[[T]] : f32
// CHECK: %[[V:.*]] = math.fma %[[NT]], %[[U]], %[[R]] : f32
// CHECK: %[[SAT:.*]] = arith.cmpf ogt, %[[T]], %[[BOUND]] : f32
// CHECK: %[[Y:.*]] = arith.select %[[SAT]], %[[R]], %[[V]] : f32
// CHECK-NOT: arith.mulf
// CHECK: memref.store %[[Y]]
// PTX-LABEL: .entry gelu(
// PTX-NOT: __nv_erff
// PTX-NOT: bra
// PTX: {{ex2.approx|__nv_exp2f}}
// PTX: max.NaN.f32
// PTX-NOT: bra
// PTX: ret;

// Kiln's Gelu lowering, (0.5 * x) * (1 + erf): c = 0.5; x * (1 + erf)
// without a constant after it: c = 1, log2 1 = 0 (a product, not an FMA), max(x, 0)
// times 2. A GELU whose erf argument has another use is left to the sum's
// pattern (the product by x stays).
// CHECK-LABEL: gpu.func @gelu_groupings
// CHECK-DAG: %[[NEG1:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[G1:.*]] = math.fma %{{.*}}, %{{.*}}, %[[NEG1]] : f32
// CHECK: math.exp2 %[[G1]]
// CHECK: %[[R1:.*]] = arith.maximumf %{{.*}}, %[[ZERO]] : f32
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[R1]] : f32
// CHECK: %[[G2:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: math.exp2 %[[G2]]
// CHECK: %[[R2:.*]] = arith.maximumf %{{.*}}, %[[ZERO]] : f32
// CHECK: %[[R2X:.*]] = arith.mulf %[[R2]], %[[TWO]] : f32
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[R2X]] : f32
// CHECK: math.exp2
// CHECK: arith.select
// CHECK: arith.subf
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK-NOT: math.erf
// CHECK: gpu.return

// CHECK-LABEL: gpu.func @one_plus_erf
// CHECK-DAG: %[[BOUND:.*]] = arith.constant 5.51543{{[0-9]*}} : f32
// CHECK-DAG: %[[C0:.*]] = arith.constant 1.15110{{[0-9]*}} : f32
// CHECK-NOT: math.erf
// CHECK: %[[Y:.*]] = memref.load
// CHECK-NOT: arith.mulf
// CHECK: %[[T:.*]] = math.absf %[[Y]] : f32
// CHECK: %[[C:.*]] = arith.minimumf %[[T]], %[[BOUND]] : f32
// CHECK-COUNT-6: math.fma %{{.*}}, %[[C]], %{{.*}} : f32
// CHECK: math.fma %{{.*}}, %[[C]], %[[C0]] : f32
// CHECK: %[[G:.*]] = arith.mulf
// CHECK: %[[U:.*]] = math.exp2 %[[G]] {kiln.exp2_normal} : f32
// CHECK: %[[SAT:.*]] = arith.cmpf ogt, %[[T]], %{{.*}} : f32
// CHECK: %[[U0:.*]] = arith.select %[[SAT]], %{{.*}}, %[[U]] : f32
// CHECK: %[[POS:.*]] = arith.cmpf oge, %[[Y]], %{{.*}} : f32
// CHECK: %[[UP:.*]] = arith.subf %{{.*}}, %[[U0]] : f32
// CHECK: arith.select %[[POS]], %[[UP]], %[[U0]] : f32
// CHECK-NOT: math.erf
// CHECK: gpu.return
// (The exponential is ex2.approx where the toolkit's math library is
// linked, else a call of it.)
// PTX-LABEL: .entry one_plus_erf(
// PTX-NOT: __nv_erff
// PTX-NOT: bra
// PTX: {{ex2.approx|__nv_exp2f}}
// PTX-NOT: __nv_erff
// PTX-NOT: bra
// PTX: ret;

// The division kiln-half-division leaves (x / sqrt(2) correctly rounded:
// the product, its residual, the correction, the infinity select) folds
// the same way; a divf by a constant too. A multiplier with another use
// stays.
// CHECK-LABEL: gpu.func @divisions
// CHECK-NOT: math.erf
// CHECK-NOT: arith.divf
// CHECK: math.absf %[[X:.*]] : f32
// CHECK: math.absf %[[X]] : f32
// CHECK: %[[M:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK: math.absf %[[M]] : f32
// CHECK-NOT: math.erf
// CHECK: gpu.return

// An erf not added to 1, and half ones, keep the vendor's erf.
// CHECK-LABEL: gpu.func @other_sums
// CHECK: math.erf %{{.*}} : f32
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: math.erf %{{.*}} : f16
// CHECK-NOT: math.exp2
// CHECK: gpu.return
// A GELU whose result is quantized (divided by the scale 0.0154, clamped,
// rounded to an integer) takes the five-term polynomial: 4 FMAs and the
// last one, against 7 and the last one. Its error, 0.5 / 0.0154 * 5.5 *
// 7.1e-7 = 1.3e-4 of a unit, is below the tolerance (1e-3). With a scale
// of 1e-5 (error 0.2 of a unit) or a use that is not rounded, the long one.
// CHECK-LABEL: gpu.func @quantized_gelu
// CHECK: %[[C1:.*]] = arith.minimumf
// CHECK-COUNT-4: math.fma %{{.*}}, %[[C1]], %{{.*}} : f32
// CHECK-NEXT: arith.negf %[[C1]]
// CHECK: math.roundeven
// CHECK: %[[C2:.*]] = arith.minimumf
// CHECK-COUNT-7: math.fma %{{.*}}, %[[C2]], %{{.*}} : f32
// CHECK-NEXT: arith.negf %[[C2]]
// CHECK: math.roundeven
// CHECK: %[[C3:.*]] = arith.minimumf
// CHECK-COUNT-7: math.fma %{{.*}}, %[[C3]], %{{.*}} : f32
// CHECK-NEXT: arith.negf %[[C3]]
// CHECK: math.roundeven
// CHECK: gpu.return
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @gelu(%x: memref<256xf32>, %out: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %r2 = arith.constant 0.707106769 : f32
      %one = arith.constant 1.0 : f32
      %half = arith.constant 0.5 : f32
      %y = arith.mulf %v, %r2 : f32
      %e = math.erf %y : f32
      %s = arith.addf %one, %e : f32
      %g = arith.mulf %v, %s : f32
      %h = arith.mulf %g, %half : f32
      memref.store %h, %out[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @gelu_groupings(%x: memref<256xf32>, %out: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %r2 = arith.constant 0.707106769 : f32
      %one = arith.constant 1.0 : f32
      %half = arith.constant 0.5 : f32
      %hx = arith.mulf %half, %v : f32
      %y = arith.mulf %v, %r2 : f32
      %e = math.erf %y : f32
      %s = arith.addf %one, %e : f32
      %g1 = arith.mulf %hx, %s : f32
      %y2 = arith.mulf %g1, %r2 : f32
      %e2 = math.erf %y2 : f32
      %s2 = arith.addf %e2, %one : f32
      %g2 = arith.mulf %s2, %g1 : f32
      %y3 = arith.mulf %g2, %r2 : f32
      %e3 = math.erf %y3 : f32
      %s3 = arith.addf %e3, %one : f32
      %g3 = arith.mulf %g2, %s3 : f32
      %t = arith.addf %g3, %y3 : f32
      memref.store %t, %out[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @one_plus_erf(%x: memref<256xf32>, %out: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %r2 = arith.constant 0.707106769 : f32
      %one = arith.constant 1.0 : f32
      %y = arith.mulf %v, %r2 : f32
      %e = math.erf %y : f32
      %s = arith.addf %one, %e : f32
      memref.store %s, %out[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @divisions(%x: memref<256xf32>, %out: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %r = arith.constant 0.707106769 : f32
      %c = arith.constant 1.41421354 : f32
      %inf = arith.constant 0x7F800000 : f32
      %one = arith.constant 1.0 : f32
      %q0 = arith.mulf %v, %r : f32
      %n = arith.negf %q0 : f32
      %e = math.fma %n, %c, %v : f32
      %q1 = math.fma %e, %r, %q0 : f32
      %a = math.absf %q0 : f32
      %isinf = arith.cmpf oeq, %a, %inf : f32
      %y = arith.select %isinf, %q0, %q1 : f32
      %erf = math.erf %y : f32
      %s = arith.addf %erf, %one : f32
      %d = arith.divf %v, %c : f32
      %erf2 = math.erf %d : f32
      %s2 = arith.addf %erf2, %one : f32
      %m = arith.mulf %v, %r : f32
      %erf3 = math.erf %m : f32
      %s3 = arith.addf %one, %erf3 : f32
      %t = arith.addf %s, %s2 : f32
      %t2 = arith.addf %t, %s3 : f32
      %t3 = arith.addf %t2, %m : f32
      memref.store %t3, %out[%i] : memref<256xf32>
      gpu.return
    }
    gpu.func @other_sums(%x: memref<256xf32>, %h: memref<256xf16>, %out: memref<256xf32>, %hout: memref<256xf16>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %two = arith.constant 2.0 : f32
      %e = math.erf %v : f32
      %s = arith.addf %e, %two : f32
      memref.store %s, %out[%i] : memref<256xf32>
      %w = memref.load %h[%i] : memref<256xf16>
      %one = arith.constant 1.0 : f16
      %eh = math.erf %w : f16
      %sh = arith.addf %eh, %one : f16
      memref.store %sh, %hout[%i] : memref<256xf16>
      gpu.return
    }
    gpu.func @quantized_gelu(%x: memref<256xf32>, %out: memref<256xi8>, %fout: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %r2 = arith.constant 0.707106769 : f32
      %one = arith.constant 1.0 : f32
      %half = arith.constant 0.5 : f32
      %scale = arith.constant 0.0154 : f32
      %tiny = arith.constant 1.0e-5 : f32
      %lo = arith.constant -128.0 : f32
      %hi = arith.constant 127.0 : f32
      %zp = arith.constant 11.0 : f32
      %y = arith.mulf %v, %r2 : f32
      %e = math.erf %y : f32
      %s = arith.addf %one, %e : f32
      %g = arith.mulf %v, %s : f32
      %h = arith.mulf %g, %half : f32
      %q = arith.divf %h, %scale : f32
      %qz = arith.addf %q, %zp : f32
      %ql = arith.maximumf %qz, %lo : f32
      %qh = arith.minimumf %ql, %hi : f32
      %qr = math.roundeven %qh : f32
      %qi = arith.fptosi %qr : f32 to i8
      memref.store %qi, %out[%i] : memref<256xi8>
      %y2 = arith.mulf %v, %r2 : f32
      %e2 = math.erf %y2 : f32
      %s2 = arith.addf %one, %e2 : f32
      %g2 = arith.mulf %v, %s2 : f32
      %h2 = arith.mulf %g2, %half : f32
      %q2 = arith.divf %h2, %tiny : f32
      %r2d = math.roundeven %q2 : f32
      %qi2 = arith.fptosi %r2d : f32 to i8
      memref.store %qi2, %out[%i] : memref<256xi8>
      %y3 = arith.mulf %v, %r2 : f32
      %e3 = math.erf %y3 : f32
      %s3 = arith.addf %one, %e3 : f32
      %g3 = arith.mulf %v, %s3 : f32
      %h3 = arith.mulf %g3, %half : f32
      %q3 = arith.divf %h3, %scale : f32
      %r3 = math.roundeven %q3 : f32
      %qi3 = arith.fptosi %r3 : f32 to i8
      memref.store %qi3, %out[%i] : memref<256xi8>
      memref.store %h3, %fout[%i] : memref<256xf32>
      gpu.return
    }
  }
}
