// 8-bit integer contractions (an int8 model's u8 x s8 products into i32)
// on tensor cores down to PTX: mma.sync m16n8k32 with each operand's
// signedness from the extension the body reads it through, four bytes of K
// per register (vector<4xi8> shared loads), the sums wrapping as the CPU's
// i32 ones do; the requantizing epilogue stays fused. Without tensor cores
// the same product is integer multiply-adds.
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_90'}, canonicalize, gpu-launch-sink-index-computations, gpu-kernel-outlining, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_90 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90' tensor-cores=0" | FileCheck %s --check-prefix=SIMT

// IR-LABEL: func.func private @mm_u8s8
// IR: gpu.launch {{.*}} workgroup(%[[XS:.*]] : memref<2x64x80xi8, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x64x80xi8, #gpu.address_space<workgroup>>)
// IR: vector.load %[[XS]]{{.*}} {alignment = 4 : i64} : memref<2x64x80xi8, #gpu.address_space<workgroup>>, vector<4xi8>
// IR: llvm.bitcast {{.*}} : vector<4xi8> to i32
// IR: nvvm.mma.sync {{.*}} {intOverflowBehavior = #nvvm.mma_int_overflow<wrapped>, layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<u8>, multiplicandBPtxType = #nvvm.mma_type<s8>, shape = #nvvm.shape<m = 16, n = 8, k = 32>}
// IR: arith.sitofp
// IR: arith.mulf
// IR-LABEL: func.func private @mm_s8s8
// IR: multiplicandAPtxType = #nvvm.mma_type<s8>, multiplicandBPtxType = #nvvm.mma_type<s8>
// IR-LABEL: func.func private @mm_wide
// IR-NOT: nvvm.mma.sync
// IR: return

// SIMT-LABEL: func.func private @mm_u8s8
// SIMT-NOT: nvvm.mma.sync
// SIMT: arith.muli

// CHECK-LABEL: .visible .entry mm_u8s8_kernel(
// CHECK-DAG: bar.sync
// CHECK-DAG: ld.shared.b32
// CHECK-DAG: mma.sync.aligned.m16n8k32.row.col.s32.u8.s8.s32
// CHECK-DAG: cvt.rn.f32.s32
// CHECK-LABEL: .visible .entry mm_s8s8_kernel(
// CHECK: mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32
// CHECK-LABEL: .visible .entry mm_wide_kernel(
// CHECK-NOT: mma.sync
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#mN = affine_map<(d0, d1) -> (d1)>
#mI = affine_map<(d0, d1) -> (d0, d1)>
module {
  // u8 activations x s8 weights, K = 200 (not a multiple of the 64-byte
  // slab), a bias and a per-channel scale after it.
  func.func private @mm_u8s8(%a: memref<256x200xi8>, %b: memref<200x384xi8>, %bias: memref<384xi32>, %scale: memref<384xf32>, %y: memref<256x384xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    %acc = memref.alloc() : memref<256x384xi32>
    linalg.fill ins(%zero : i32) outs(%acc : memref<256x384xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<256x200xi8>, memref<200x384xi8>) outs(%acc : memref<256x384xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    linalg.generic {indexing_maps = [#mI, #mN, #mN, #mI], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %bias, %scale : memref<256x384xi32>, memref<384xi32>, memref<384xf32>) outs(%y : memref<256x384xf32>) {
    ^bb0(%v: i32, %bv: i32, %sc: f32, %o: f32):
      %t = arith.addi %v, %bv : i32
      %f = arith.sitofp %t : i32 to f32
      %q = arith.mulf %f, %sc : f32
      linalg.yield %q : f32
    }
    memref.dealloc %acc : memref<256x384xi32>
    return
  }
  func.func private @mm_s8s8(%a: memref<512x256xi8>, %b: memref<256x512xi8>, %y: memref<512x512xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<512x512xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x256xi8>, memref<256x512xi8>) outs(%y : memref<512x512xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extsi %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  // 16-bit operands: no integer matrix instruction.
  func.func private @mm_wide(%a: memref<256x256xi16>, %b: memref<256x256xi16>, %y: memref<256x256xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<256x256xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<256x256xi16>, memref<256x256xi16>) outs(%y : memref<256x256xi32>) {
    ^bb0(%x: i16, %w: i16, %s: i32):
      %xe = arith.extsi %x : i16 to i32
      %we = arith.extsi %w : i16 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
}
