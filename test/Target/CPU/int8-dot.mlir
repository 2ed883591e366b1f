// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512 int8-dot=true" | FileCheck %s
// RUN: kiln-opt %s --kiln-cpu-codegen="vector-bits=512" | FileCheck %s --check-prefix=WIDEN

// A uint8 x int8 matmul into int32 (what MatMulInteger with constant
// weights lowers to) on a chip with AVX512-VNNI: the int8 B (8 x 32, a
// constant global) is packed at compile time in quads, ceil(32/32) x 8/4 x
// 4*32 (each panel row the 32 columns' four k values side by side,
// whatever B's size), and each step of four along k is one vpdpbusd per
// accumulator: per row A's four bytes broadcast as one 32-bit word, per 16
// columns one load of 64 bytes.
// CHECK: memref.global "private" constant @w_quads32 : memref<1x2x128xi8> = dense_resource<w_quads32>
// CHECK-LABEL: func.func private @k(
// CHECK-SAME: memref<1x2x128xi8>
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c4
// CHECK: vector.load %{{.*}} : memref<1x2x128xi8>, vector<64xi8>
// CHECK: vector.load %{{.*}} : memref<1x2x128xi8>, vector<64xi8>
// CHECK: %[[A:.*]] = vector.load %{{.*}} : memref<16x8xi8>, vector<4xi8>
// CHECK: %[[W:.*]] = vector.bitcast %[[A]] : vector<4xi8> to vector<1xi32>
// CHECK: %[[E:.*]] = vector.extract %[[W]][0] : i32 from vector<1xi32>
// CHECK: %[[B:.*]] = vector.broadcast %[[E]] : i32 to vector<16xi32>
// CHECK: %[[Q:.*]] = vector.bitcast %[[B]] : vector<16xi32> to vector<64xi8>
// CHECK: llvm.call_intrinsic "llvm.x86.avx512.vpdpbusd.512"(%{{.*}}, %[[Q]], %{{.*}}) : (vector<16xi32>, vector<64xi8>, vector<64xi8>) -> vector<16xi32>
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: memref.get_global @w_quads32 : memref<1x2x128xi8>
// Without VNNI: a small B is not packed, the tiles widen both operands to
// i32 lanes and multiply-add.
// WIDEN: memref.global "private" constant @w : memref<8x32xi8>
// WIDEN-LABEL: func.func private @k(
// WIDEN: arith.extsi %{{.*}} : vector<16xi8> to vector<16xi32>
// WIDEN: arith.extui %{{.*}} : i8 to i32
// WIDEN: arith.muli %{{.*}}, %{{.*}} : vector<16xi32>
// WIDEN: arith.addi %{{.*}}, %{{.*}} : vector<16xi32>
// WIDEN-NOT: vpdpbusd
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
module {
  memref.global "private" constant @w : memref<8x32xi8> = dense_resource<wblob> {alignment = 64 : i64}
  func.func private @k(%x: memref<16x8xi8>, %w: memref<8x32xi8>, %y: memref<16x32xi32>) attributes {kiln.kernel} {
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]} ins(%x, %w : memref<16x8xi8>, memref<8x32xi8>) outs(%y : memref<16x32xi32>) {
    ^bb0(%in: i8, %in_0: i8, %out: i32):
      %0 = arith.extui %in : i8 to i32
      %1 = arith.extsi %in_0 : i8 to i32
      %2 = arith.muli %0, %1 : i32
      %3 = arith.addi %out, %2 : i32
      linalg.yield %3 : i32
    }
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = ""} {
    %x = kiln.input %ctx [0] : memref<16x8xi8>
    %w = memref.get_global @w : memref<8x32xi8>
    %y = kiln.buffer %ctx : memref<16x32xi32>
    kiln.launch %ctx @k(%x, %w, %y) : memref<16x8xi8>, memref<8x32xi8>, memref<16x32xi32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

{-#
  dialect_resources: {
    builtin: {
      wblob: "0x0100000045579404784F1B7437EFC710C7B000CB1EB2A52971B3355E21E87462059F87AF4C807C2AFC26A0E1F1FAC865AEA9237AB71A15BF2AE81363AE4522FB14DEE0DF900573A3ADC2CC93A9480DF8EE560C667C36AA26BB792BE1FC880ABBF03ED72A5A9FB3CAF097A58DBFE0BD48AE3DBB928BE3DEBF75EB9F8B59B305A3F1A41A335FDC9F6F94B348E6053770D6E89DD1D22F00BC62D98671511F364600CE866AA82B970FC5FA76341337C31E4654A980E22BD1FAF2654154904D5697D464A004D0647980937D261F6F9954E0AAC2874D552181ED8781B2E1BCE51A0FDDB3734BA98B0C67BB03C431BACF0E899594E904213B957D6A5E3EDBEA401584C6CD0A2A2C"
    }
  }
#-}
