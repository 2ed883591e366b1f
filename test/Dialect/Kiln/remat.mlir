// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-bytes=10000 --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-remat=budget-fraction=0.8 --kiln-plan-memory | FileCheck %s --check-prefix=FRAC

// A chain recomputed: `a` (made from `t`, made from the input) is used
// right away and again after the peak (m2's launch: a, m1, m2 live, 12 KiB).
// Recomputing `a` alone would keep `t` alive across the peak (no gain), so
// t and a are recomputed together right before `join`, from the input: the
// peak becomes 9 KiB (t', a' and m3 at a's recomputation).
// CHECK-LABEL: module attributes {kiln.arena_size = 9216 : i64
// CHECK-SAME: kiln.peak_live_bytes = 9216 : i64
// CHECK-SAME: kiln.remat = {arena_before = 12288 : i64, budget_bytes = 10000 : i64, peak_before = 12288 : i64
// CHECK: %[[X:.*]] = kiln.input
// CHECK: kiln.launch %{{.*}} @cheap(%{{.*}}, %[[A:.*]]) {kiln.launch_nodes = "a"}
// CHECK: kiln.launch %{{.*}} @cheap(%[[A]], %{{.*}}) {kiln.launch_nodes = "m1"}
// CHECK: kiln.launch %{{.*}} @shrink(%{{.*}}, %[[M3:.*]]) {
// CHECK: %[[Y:.*]] = kiln.output
// CHECK-NEXT: %[[T2:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @cheap(%[[X]], %[[T2]]) {kiln.launch_nodes = "t", kiln.remat = "recompute"}
// CHECK-NEXT: %[[A2:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @cheap(%[[T2]], %[[A2]]) {kiln.launch_nodes = "a", kiln.remat = "recompute"}
// CHECK-NEXT: kiln.launch %{{.*}} @join(%[[A2]], %[[M3]], %[[Y]])
// A fraction of the unconstrained peak: 0.8 x 12288 = 9830 bytes.
// FRAC-LABEL: module attributes {kiln.arena_size = 9216 : i64
// FRAC-SAME: budget_bytes = 9830 : i64
// FRAC-COUNT-2: kiln.remat = "recompute"
module {
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @shrink(%x: memref<1024xf32>, %o: memref<256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<256xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %t = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%x, %t) {kiln.launch_nodes = "t"} : memref<1024xf32>, memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%t, %a) {kiln.launch_nodes = "a"} : memref<1024xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%a, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %m3 = kiln.buffer %ctx : memref<256xf32>
    kiln.launch %ctx @shrink(%m2, %m3) {kiln.launch_nodes = "m3"} : memref<1024xf32>, memref<256xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m3, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<256xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}

// -----

// A tensor first used after the peak is moved there: its original launch
// becomes dead and goes, so no FLOPs are added ("move"); 8 KiB is the
// least possible (m1 and m2 at m2's launch).
// CHECK-LABEL: module attributes {kiln.arena_size = 8192 : i64
// CHECK-SAME: peak_before = 12288 : i64
// CHECK: %[[X:.*]] = kiln.input
// CHECK-NOT: "a"
// CHECK: kiln.launch %{{.*}} @shrink
// CHECK: %[[Y:.*]] = kiln.output
// CHECK-NEXT: %[[A:.*]] = kiln.buffer
// CHECK-NEXT: kiln.launch %{{.*}} @cheap(%[[X]], %[[A]]) {kiln.launch_nodes = "a", kiln.remat = "move"}
// CHECK-NEXT: kiln.launch %{{.*}} @join(%[[A]],
module {
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @shrink(%x: memref<1024xf32>, %o: memref<256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<256xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %a = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%x, %a) {kiln.launch_nodes = "a"} : memref<1024xf32>, memref<1024xf32>
    %m1 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%x, %m1) {kiln.launch_nodes = "m1"} : memref<1024xf32>, memref<1024xf32>
    %m2 = kiln.buffer %ctx : memref<1024xf32>
    kiln.launch %ctx @cheap(%m1, %m2) {kiln.launch_nodes = "m2"} : memref<1024xf32>, memref<1024xf32>
    %m3 = kiln.buffer %ctx : memref<256xf32>
    kiln.launch %ctx @shrink(%m2, %m3) {kiln.launch_nodes = "m3"} : memref<1024xf32>, memref<256xf32>
    %y = kiln.output %ctx [0] : memref<1024xf32>
    kiln.launch %ctx @join(%a, %m3, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<256xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
