// kiln-remat with `weights` (kilnc --max-memory-weights, docs/remat.md): the
// budget covers the weights too, and the arena gets what they leave.
// RUN: kiln-opt %s --kiln-remat="budget-bytes=14200 weights=true" --kiln-plan-memory | FileCheck %s
// RUN: kiln-opt %s --kiln-remat="budget-bytes=14200" --kiln-plan-memory | FileCheck %s --check-prefix=ARENA
// RUN: kiln-opt %s --kiln-remat="budget-fraction=0.85 weights=true" --kiln-plan-memory | FileCheck %s --check-prefix=FRAC
// RUN: not kiln-opt %s --kiln-remat="budget-bytes=4000 weights=true" 2>&1 | FileCheck %s --check-prefix=EXCEED
// RUN: not kiln-opt %s --kiln-remat="budget-bytes=12000 weights=true" 2>&1 | FileCheck %s --check-prefix=UNREACHABLE
// RUN: not kiln-opt %s --kiln-remat="budget-bytes=4000 weights=true weight-alignment=256" 2>&1 | FileCheck %s --check-prefix=DEVICE

// The program of remat.mlir's chain (peak 12 KiB at m2's launch; t and a
// recomputed before `join`: 9 KiB), with `join` reading three weights:
// a splat constant of 4000 bytes (named by its symbol), a resource of 16
// (named by its resource, as the importer names initializers) and external
// weight 0, 32 bytes (named by its signature record): 4032 + 64 + 64 = 4160
// bytes, each rounded up to the 64-byte alignment. Not weights: an index
// array (a host reshape's shape) and a constant nothing reads.
// 14200 bytes leave 10040 for the arena, which recomputation reaches
// (9216); as an arena budget, 14200 bytes needs nothing.
// CHECK-LABEL: module attributes {kiln.arena_size = 9216 : i64
// CHECK-SAME: kiln.remat = {arena_before = 12288 : i64, arena_budget_bytes = 10040 : i64, budget_bytes = 14200 : i64, num_weights = 3 : i64, peak_before = 12288 : i64
// CHECK-SAME: weights_bytes = 4160 : i64
// CHECK-COUNT-2: kiln.remat = "recompute"
// ARENA-LABEL: module attributes {kiln.arena_size = 12288 : i64
// ARENA-SAME: kiln.remat = {arena_before = 12288 : i64, budget_bytes = 14200 : i64, peak_before = 12288 : i64
// ARENA-NOT: weights_bytes
// ARENA-NOT: kiln.remat = "recompute"
// A fraction is of the unconstrained peak plus the weights:
// 0.85 x (12288 + 4160) = 13980 bytes, 9820 for the arena.
// FRAC-LABEL: module attributes {kiln.arena_size = 9216 : i64
// FRAC-SAME: arena_budget_bytes = 9820 : i64, budget_bytes = 13980 : i64
// FRAC-COUNT-2: kiln.remat = "recompute"
// EXCEED: error: memory budget of 4000 bytes (3.91 KiB) leaves nothing for the arena: the 3 weights alone take 4160 bytes (4.06 KiB) (--max-memory-weights counts them; the unconstrained arena is 12288 bytes (12.00 KiB)); the largest weights: '__kiln_constant_0' 4032 bytes (3.94 KiB), '/fc/bias' 64 bytes, 'scale' 64 bytes
// A device's allocations of 256 bytes: 4096 + 256 + 256.
// DEVICE: error: memory budget of 4000 bytes (3.91 KiB) leaves nothing for the arena: the 3 weights alone take 4608 bytes (4.50 KiB)
// The sizes that fit count the weights: 9216 + 4160 = 13376 bytes, 0.82x
// of 16448.
// UNREACHABLE: error: memory budget of 12000 bytes (11.72 KiB), of which the weights take 4160 bytes (4.06 KiB) and leave 7840 bytes (7.66 KiB) for the arena, cannot be met: the smallest peak reached is 9216 bytes (9.00 KiB) (0.75x the unconstrained peak) after recomputing 2 tensors (+0 FLOPs), an arena of 9216 bytes (9.00 KiB) (--max-memory=13376 or 0.82x fits, weights included); the largest tensors live at the peak: 't' 4096 bytes (4.00 KiB), 'a' 4096 bytes (4.00 KiB), 'm3' 1024 bytes (1.00 KiB)
module {
  memref.global "private" constant @__kiln_constant_0 : memref<1000xf32> = dense<5.000000e-01> {alignment = 64 : i64}
  memref.global "private" constant @__kiln_constant_1 : memref<4xf32> = dense_resource<"/fc/bias"> {alignment = 64 : i64}
  memref.global "private" constant @__kiln_constant_2 : memref<1xindex> = dense<[1024]> {alignment = 64 : i64}
  memref.global "private" constant @__kiln_constant_3 : memref<2048xf32> = dense<1.000000e+00> {alignment = 64 : i64}
  func.func private @cheap(%x: memref<1024xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @shrink(%x: memref<1024xf32>, %o: memref<256xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func private @join(%x: memref<1024xf32>, %y: memref<256xf32>, %w: memref<1000xf32>, %b: memref<4xf32>, %s: memref<8xf32>, %o: memref<1024xf32>) attributes {kiln.num_outputs = 1 : i64} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 1024\0Aoutput y f32 1 1024\0Aweights-file w.weights 0123456789abcdef 96\0Aweight scale f32 1 8 64 32\0A"} {
    %x = kiln.input %ctx [0] : memref<1024xf32>
    %w = memref.get_global @__kiln_constant_0 : memref<1000xf32>
    %b = memref.get_global @__kiln_constant_1 : memref<4xf32>
    %shape = memref.get_global @__kiln_constant_2 : memref<1xindex>
    %s = kiln.external_weight %ctx [0] : memref<8xf32>
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
    kiln.launch %ctx @join(%a, %m3, %w, %b, %s, %y) {kiln.launch_nodes = "join"} : memref<1024xf32>, memref<256xf32>, memref<1000xf32>, memref<4xf32>, memref<8xf32>, memref<1024xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
