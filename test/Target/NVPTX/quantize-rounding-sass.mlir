// kiln-nvptx-quantize-rounding's 8-bit form as ptxas assembles it (the
// byte kernels of quantize-rounding.mlir, sm_80 and sm_90): one FADD of
// 1.5 * 2^23 (+ an even zero point) after the two FMNMX clamps, and no
// conversion (F2I) at all, even where the byte is stored alone. ptxas
// (CUDA 13) stores a register that an f32 instruction wrote with st.b8 as a
// conversion of the float (F2I.U8.TRUNC: 255 for every value); the pass's
// inline mov.b32 between them keeps the store a plain STG.E.U8. The
// 16-bit kernel keeps its one F2I (cvt.rni.s32.f32).
// REQUIRES: ptxas, nvdisasm
// RUN: kiln-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_80 features=+ptx80 O=3}, gpu.module(kiln-nvptx-quantize-rounding, arith-expand, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | %python %S/Inputs/ptxas_notes.py sm_80 --sass | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(kiln-nvptx-quantize-rounding, arith-expand, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | %python %S/Inputs/ptxas_notes.py sm_90 --sass | FileCheck %s
//
// CHECK-LABEL: .text.sixteen_bits:
// CHECK: F2I
// CHECK: EXIT
//
// CHECK-LABEL: .text.even_zero_point:
// CHECK-NOT: F2I
// CHECK: FMNMX {{.*}}-128
// CHECK-NOT: F2I
// CHECK: FMNMX {{.*}}127
// CHECK-NOT: F2I
// CHECK: FADD {{.*}}12583040
// CHECK-NOT: F2I
// CHECK: STG.E.U8
// CHECK-NOT: F2I
// CHECK: EXIT
//
// CHECK-LABEL: .text.signed_byte:
// CHECK-NOT: F2I
// CHECK: FADD {{.*}}12582912
// CHECK-NOT: F2I
// CHECK: STG.E.U8
// CHECK-NOT: F2I
// CHECK: EXIT
//
// CHECK-LABEL: .text.unsigned_clamp:
// CHECK-NOT: F2I
// CHECK: FADD {{.*}}12582912
// CHECK-NOT: F2I
// CHECK: STG.E.U8
// CHECK-NOT: F2I
// CHECK: EXIT
//
// CHECK-LABEL: .text.quantize:
// CHECK-NOT: F2I
// CHECK: FADD {{.*}}12582912
// CHECK-NOT: F2I
// CHECK: STG.E.U8
// CHECK-NOT: F2I
// CHECK: EXIT

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
  }
}
