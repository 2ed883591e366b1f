// RUN: kiln-opt %s --kiln-convert-host-to-llvm --reconcile-unrealized-casts | FileCheck %s

// The host ops become calls of the runtime ABI (ModelABI.h); the kernel gets
// a packed entry the runtime calls with an array of argument pointers; the
// signature text carries the arena size.

// CHECK-DAG: llvm.func @kiln_rt_input(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @kiln_rt_input_dim(!llvm.ptr, i64, i64) -> i64
// CHECK-DAG: llvm.func @kiln_rt_output(!llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @kiln_rt_arena(!llvm.ptr) -> !llvm.ptr
// CHECK-DAG: llvm.func @kiln_rt_alloc(!llvm.ptr, i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @kiln_rt_launch_cpu(!llvm.ptr, !llvm.ptr, !llvm.ptr)

// CHECK: llvm.func @kiln_model_main(%[[CTX:.*]]: !llvm.ptr) -> i32
// CHECK: llvm.call @kiln_rt_input(%[[CTX]], %{{.*}}) : (!llvm.ptr, i64) -> !llvm.ptr
// CHECK: llvm.call @kiln_rt_input_dim(%[[CTX]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, i64) -> i64
// Static buffer: a view of the arena at its planned offset (an i64 value:
// offsets past 2^28 do not fit GEP's constant indices).
// CHECK: %[[BASE:.*]] = llvm.call @kiln_rt_arena(%[[CTX]])
// CHECK: %[[OFF:.*]] = llvm.mlir.constant(128 : i64) : i64
// CHECK: llvm.getelementptr %[[BASE]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// Dynamic buffer: from the runtime, and checked: a null pointer ends the run
// with status 1.
// CHECK: %[[P:.*]] = llvm.call @kiln_rt_alloc(%[[CTX]], %{{.*}})
// CHECK: llvm.icmp "eq"
// CHECK: llvm.cond_br %{{.*}}, ^[[FAIL:.*]], ^[[OK:.*]]
// CHECK: ^[[FAIL]]:
// CHECK: llvm.return %{{.*}} : i32
// CHECK: ^[[OK]]:
// CHECK: llvm.call @kiln_rt_output(%[[CTX]], %{{.*}}, %{{.*}}) : (!llvm.ptr, i64, !llvm.ptr) -> !llvm.ptr
// CHECK: llvm.cond_br
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @k_packed : !llvm.ptr
// CHECK: llvm.call @kiln_rt_launch_cpu(%[[CTX]], %[[FN]], %{{.*}})

// CHECK: llvm.func internal @k_packed(%{{.*}}: !llvm.ptr)
// CHECK-COUNT-4: llvm.load
// CHECK: llvm.call @_mlir_ciface_k(
// CHECK: llvm.mlir.global external constant @kiln_model_signature("kiln-signature 1\0Aarena 256\0Ainput x f32 1 ?N\0Aoutput y f32 1 ?N\0A\00")
module attributes {kiln.arena_size = 256 : i64} {
  func.func private @k(%a: memref<?xf32>, %n: index, %b: memref<?xf32>) attributes {kiln.kernel, llvm.emit_c_interface} {
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input x f32 1 ?N\0Aoutput y f32 1 ?N\0A"} {
    %c0 = arith.constant 0 : index
    %x = kiln.input %ctx [0] : memref<?xf32>
    %n = memref.dim %x, %c0 : memref<?xf32>
    %t = kiln.buffer %ctx {offset = 128} : memref<4xf32>
    %u = kiln.buffer %ctx (%n) : memref<?xf32>
    %y = kiln.output %ctx [0] (%n) : memref<?xf32>
    kiln.launch %ctx @k(%x, %n, %y) : memref<?xf32>, index, memref<?xf32>
    %z = arith.constant 0 : i32
    return %z : i32
  }
}
