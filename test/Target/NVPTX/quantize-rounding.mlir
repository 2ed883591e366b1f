// RUN: kiln-opt %s --pass-pipeline="builtin.module(gpu.module(kiln-nvptx-quantize-rounding))" | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(kiln-nvptx-quantize-rounding, arith-expand, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX

// A QuantizeLinear to uint8 with zero point 127 (its lowering: roundeven,
// + zp, clamp to [0, 255], fptosi, trunci): no conversion. v is clamped to
// [0 - 127, 255 - 127] in f32 (max first), 1.5 * 2^23 added (the sum's
// pattern holds roundeven(v)), and the odd zero point added to the integer
// (test/Target/NVPTX/quantize-rounding-values.py checks the values). The
// pattern is read through an inline mov.b32 (quantize-rounding-sass.mlir:
// ptxas would store the f32 register as a conversion).
// CHECK-LABEL: gpu.func @quantize
// CHECK-NOT: math.roundeven
// CHECK-NOT: llvm.call_intrinsic
// CHECK: %[[LO:.*]] = llvm.intr.maxnum(%{{.*}}, %[[LOB:.*]]) : (f32, f32) -> f32
// CHECK: %[[HI:.*]] = llvm.intr.minnum(%[[LO]], %[[HIB:.*]]) : (f32, f32) -> f32
// CHECK: %[[S:.*]] = arith.addf %[[HI]], %[[M:.*]] : f32
// CHECK: %[[BITS:.*]] = llvm.inline_asm "mov.b32 $0, $1;", "=r,f" %[[S]] : (f32) -> i32
// CHECK: %[[Q:.*]] = arith.addi %[[BITS]], %{{.*}} : i32
// CHECK: arith.trunci %[[Q]] : i32 to i8
// CHECK-NOT: arith.fptosi
// PTX-LABEL: .entry quantize(
// PTX-NOT: cvt.rni
// PTX: max.f32 {{.*}}, 0fC2FE0000;
// PTX: min.f32 {{.*}}, 0f43000000;
// PTX: add.rn.f32 {{.*}}, 0f4B400000;
// PTX: add.s16 {{.*}}, 127;
// PTX-NOT: cvt.rni
// PTX: ret;

// The NaN-ignoring clamp in the other order, unsigned, no zero point, to
// 8 bits: the same form without the integer addition.
// CHECK-LABEL: gpu.func @unsigned_clamp
// CHECK-NOT: llvm.call_intrinsic
// CHECK: llvm.intr.maxnum
// CHECK: llvm.intr.minnum
// CHECK: %[[S:.*]] = arith.addf %{{.*}}, %{{.*}} : f32
// CHECK: %[[BITS:.*]] = llvm.inline_asm "mov.b32 $0, $1;", "=r,f" %[[S]] : (f32) -> i32
// CHECK-NEXT: arith.trunci %[[BITS]] : i32 to i8
// CHECK-NOT: arith.addi
// CHECK: memref.store
// PTX-LABEL: .entry unsigned_clamp(
// PTX: max.f32 {{.*}}, 0f00000000;
// PTX: min.f32 {{.*}}, 0f437F0000;
// PTX: add.rn.f32 {{.*}}, 0f4B400000;
// PTX-NOT: cvt.rni
// PTX-NOT: {{max|min}}.s32
// PTX: ret;

// int8 without a zero point through the lowering's fptosi to i32 and
// trunci: the clamp to [-128, 127], the addition, no conversion.
// CHECK-LABEL: gpu.func @signed_byte
// CHECK: llvm.intr.maxnum
// CHECK: llvm.intr.minnum
// CHECK: llvm.inline_asm "mov.b32 $0, $1;"
// CHECK-NOT: arith.fptosi
// CHECK: memref.store
// PTX-LABEL: .entry signed_byte(
// PTX: max.f32 {{.*}}, 0fC3000000;
// PTX: min.f32 {{.*}}, 0f42FE0000;
// PTX: add.rn.f32 {{.*}}, 0f4B400000;
// PTX-NOT: cvt.rni
// PTX: ret;

// uint8 with zero point 128 (even): the zero point goes into the addition,
// 1.5 * 2^23 + 128.
// CHECK-LABEL: gpu.func @even_zero_point
// CHECK: llvm.intr.maxnum
// CHECK: llvm.intr.minnum
// CHECK: arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT: arith.addi
// CHECK: arith.trunci
// PTX-LABEL: .entry even_zero_point(
// PTX: max.f32 {{.*}}, 0fC3000000;
// PTX: min.f32 {{.*}}, 0f42FE0000;
// PTX: add.rn.f32 {{.*}}, 0f4B400080;
// PTX-NOT: add.s16
// PTX: ret;

// A 16-bit result keeps one cvt.rni.s32.f32 with the zero point and the
// clamp in integers.
// CHECK-LABEL: gpu.func @sixteen_bits
// CHECK: %[[R:.*]] = llvm.call_intrinsic "llvm.nvvm.f2i.rn"(%{{.*}}) : (f32) -> i32
// CHECK: %[[LO:.*]] = arith.maxsi %[[R]], %{{.*}} : i32
// CHECK: %[[HI:.*]] = arith.minsi %[[LO]], %{{.*}} : i32
// CHECK: %[[Q:.*]] = arith.addi %[[HI]], %{{.*}} : i32
// CHECK: arith.trunci %[[Q]] : i32 to i16
// PTX-LABEL: .entry sixteen_bits(
// PTX: cvt.rni.s32.f32
// PTX: max.s32 {{.*}}, -32771;
// PTX: min.s32 {{.*}}, 32764;
// PTX: ret;

// A zero point that is not integral, a rounding other than to even, and
// a clamp with a variable bound keep the float form.
// CHECK-LABEL: gpu.func @kept
// CHECK-NOT: llvm.call_intrinsic
// CHECK: math.roundeven
// CHECK: math.round
// CHECK: math.roundeven
// CHECK-NOT: llvm.call_intrinsic
// CHECK: gpu.return

// A dequantization (an integer product's accumulator, its scale and bias
// per channel) is one fma, either operand order; a product of a float
// (not converted from an integer) and a product with another use stay.
// CHECK-LABEL: gpu.func @dequantize
// CHECK: %[[F:.*]] = arith.sitofp %{{.*}} : i32 to f32
// CHECK: %[[Y:.*]] = math.fma %[[F]], %[[S:.*]], %[[B:.*]] : f32
// CHECK: %[[U:.*]] = arith.uitofp %{{.*}} : i32 to f32
// CHECK: %[[Y2:.*]] = math.fma %[[U]], %[[S]], %[[B]] : f32
// CHECK: %[[P:.*]] = arith.mulf %{{.*}}, %[[S]] : f32
// CHECK: arith.addf %[[P]], %[[B]] : f32
// CHECK: %[[P2:.*]] = arith.mulf %[[F]], %[[S]] : f32
// CHECK: arith.addf %[[P2]], %[[B]] : f32
// CHECK: arith.mulf %[[P2]], %{{.*}} : f32
// (fma.rn where the toolkit's math library is linked, else a call of it.)
// PTX-LABEL: .entry dequantize(
// PTX: cvt.rn.f32.s32
// PTX: {{fma.rn.f32|__nv_fmaf}}

module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @quantize(%x: memref<256xf32>, %out: memref<256xi8>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %zp = arith.constant 127.0 : f32
      %lo = arith.constant 0.0 : f32
      %hi = arith.constant 255.0 : f32
      %r = math.roundeven %v : f32
      %a = arith.addf %r, %zp : f32
      %m = arith.maximumf %a, %lo : f32
      %c = arith.minimumf %m, %hi : f32
      %q = arith.fptosi %c : f32 to i32
      %t = arith.trunci %q : i32 to i8
      memref.store %t, %out[%i] : memref<256xi8>
      gpu.return
    }
    gpu.func @unsigned_clamp(%x: memref<256xf32>, %out: memref<256xi8>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %lo = arith.constant 0.0 : f32
      %hi = arith.constant 255.0 : f32
      %r = math.roundeven %v : f32
      %m = arith.minnumf %r, %hi : f32
      %c = arith.maxnumf %lo, %m : f32
      %q = arith.fptoui %c : f32 to i8
      memref.store %q, %out[%i] : memref<256xi8>
      gpu.return
    }
    gpu.func @signed_byte(%x: memref<256xf32>, %out: memref<256xi8>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %lo = arith.constant -128.0 : f32
      %hi = arith.constant 127.0 : f32
      %r = math.roundeven %v : f32
      %m = arith.maximumf %r, %lo : f32
      %c = arith.minimumf %m, %hi : f32
      %q = arith.fptosi %c : f32 to i32
      %t = arith.trunci %q : i32 to i8
      memref.store %t, %out[%i] : memref<256xi8>
      gpu.return
    }
    gpu.func @even_zero_point(%x: memref<256xf32>, %out: memref<256xi8>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %zp = arith.constant 128.0 : f32
      %lo = arith.constant 0.0 : f32
      %hi = arith.constant 255.0 : f32
      %r = math.roundeven %v : f32
      %a = arith.addf %r, %zp : f32
      %m = arith.maximumf %a, %lo : f32
      %c = arith.minimumf %m, %hi : f32
      %q = arith.fptoui %c : f32 to i8
      memref.store %q, %out[%i] : memref<256xi8>
      gpu.return
    }
    gpu.func @sixteen_bits(%x: memref<256xf32>, %out: memref<256xi16>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %zp = arith.constant 3.0 : f32
      %lo = arith.constant -32768.0 : f32
      %hi = arith.constant 32767.0 : f32
      %r = math.roundeven %v : f32
      %a = arith.addf %r, %zp : f32
      %m = arith.maximumf %a, %lo : f32
      %c = arith.minimumf %m, %hi : f32
      %q = arith.fptosi %c : f32 to i32
      %t = arith.trunci %q : i32 to i16
      memref.store %t, %out[%i] : memref<256xi16>
      gpu.return
    }
    gpu.func @kept(%x: memref<256xf32>, %b: memref<f32>, %out: memref<256xi32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %x[%i] : memref<256xf32>
      %zp = arith.constant 127.5 : f32
      %lo = arith.constant 0.0 : f32
      %hi = arith.constant 255.0 : f32
      %r = math.roundeven %v : f32
      %a = arith.addf %r, %zp : f32
      %m = arith.maximumf %a, %lo : f32
      %c = arith.minimumf %m, %hi : f32
      %q = arith.fptosi %c : f32 to i32
      %r2 = math.round %v : f32
      %m2 = arith.maximumf %r2, %lo : f32
      %c2 = arith.minimumf %m2, %hi : f32
      %q2 = arith.fptosi %c2 : f32 to i32
      %bv = memref.load %b[] : memref<f32>
      %r3 = math.roundeven %v : f32
      %m3 = arith.maximumf %r3, %bv : f32
      %c3 = arith.minimumf %m3, %hi : f32
      %q3 = arith.fptosi %c3 : f32 to i32
      %s = arith.addi %q, %q2 : i32
      %s2 = arith.addi %s, %q3 : i32
      memref.store %s2, %out[%i] : memref<256xi32>
      gpu.return
    }
    gpu.func @dequantize(%acc: memref<256xi32>, %x: memref<256xf32>, %out: memref<256xf32>) kernel {
      %i = gpu.thread_id x
      %a = memref.load %acc[%i] : memref<256xi32>
      %v = memref.load %x[%i] : memref<256xf32>
      %s = arith.constant 0.25 : f32
      %b = arith.constant -3.5 : f32
      %f = arith.sitofp %a : i32 to f32
      %p = arith.mulf %f, %s : f32
      %y = arith.addf %p, %b : f32
      %u = arith.uitofp %a : i32 to f32
      %p1 = arith.mulf %s, %u : f32
      %y1 = arith.addf %b, %p1 : f32
      %pv = arith.mulf %v, %s : f32
      %yv = arith.addf %pv, %b : f32
      %p2 = arith.mulf %f, %s : f32
      %y2 = arith.addf %p2, %b : f32
      %z2 = arith.mulf %p2, %v : f32
      %t0 = arith.addf %y, %y1 : f32
      %t1 = arith.addf %t0, %yv : f32
      %t2 = arith.addf %t1, %y2 : f32
      %t3 = arith.addf %t2, %z2 : f32
      memref.store %t3, %out[%i] : memref<256xf32>
      gpu.return
    }
  }
}
