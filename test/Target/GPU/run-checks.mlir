// RUN: kiln-opt %s --kiln-map-kernels-to-gpu | FileCheck %s
// Run-time checks on a device target: a check of host values (a shape read
// for a view's sizes anyway) stays a host check; a check that alone would
// read device data (a Gather's index range, from a kernel's min and max)
// moves to the device with its reads: a single-thread launch writes the
// instance's check record (kiln.check_record) when the check fails and the
// record is still clear, so the run needs no host read and stays
// capturable into a device graph. The messages of device checks are the
// module's kiln.device_checks, in record order (index + 1 in element 0).
// CHECK: module attributes {{{.*}}kiln.device_checks = ["node 'g' (Gather, opset 17): indices from {0}", "node 't' (TopK, opset 17): K is {0}"]
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: %[[REC:.*]] = kiln.check_record %arg0 : memref<10xi64>
// CHECK: %[[K:.*]] = kiln.input %arg0[3] : memref<i64>
// CHECK-NOT: kiln.read %arg0, %{{.*}}[] : memref<i64>
// CHECK: gpu.launch blocks
// CHECK: %[[L:.*]] = memref.load %{{.*}}[] : memref<i64>
// CHECK: %[[OK:.*]] = arith.cmpi slt, %[[L]]
// CHECK: %[[FAILED:.*]] = arith.xori %[[OK]], %true
// CHECK: scf.if %[[FAILED]] {
// CHECK:   %[[PREV:.*]] = memref.load %[[REC]][%{{.*}}] : memref<10xi64>
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[PREV]], %c0_i64
// CHECK:   scf.if %[[FIRST]] {
// CHECK:     memref.store %c1_i64, %[[REC]][%c1{{.*}}] : memref<10xi64>
// CHECK:     memref.store %[[L]], %[[REC]][%c2{{.*}}] : memref<10xi64>
// CHECK:     memref.store %c1_i64{{.*}}, %[[REC]][%c0{{.*}}] : memref<10xi64>
// CHECK: gpu.terminator
// A check of an input's value, read before the first check's launch (which
// writes only the record): the input stays a host op, its read moves.
// CHECK: gpu.launch blocks
// CHECK: memref.load %[[K]][] : memref<i64>
// CHECK: memref.store %c2_i64, %[[REC]][%c0{{.*}}] : memref<10xi64>
// CHECK: gpu.terminator
// CHECK-NOT: indices from
// CHECK: %[[N:.*]] = kiln.read %arg0, %{{.*}}[%c0] : memref<2xi64>
// CHECK: kiln.check %{{.*}}, "node 'r' (Reshape, opset 17): the shape has {0} elements"(%[[N]] : i64) ctx(%arg0)
// CHECK: memref.reinterpret_cast
module {
  func.func private @minmax(%arg0: memref<2xi64>, %arg1: memref<i64>) attributes {kiln.kernel, kiln.num_outputs = 1 : i64} {
    %c0 = arith.constant 0 : index
    %v = memref.load %arg0[%c0] : memref<2xi64>
    memref.store %v, %arg1[] : memref<i64>
    return
  }
  func.func @kiln_model_main(%arg0: !llvm.ptr) -> i32 attributes {kiln.signature_io = "input i i64 1 2\0Ainput s i64 1 2\0Ainput x f32 1 6\0Ainput k i64 0\0Aoutput y f32 1 6\0A"} {
    %c0_i32 = arith.constant 0 : i32
    %c0 = arith.constant 0 : index
    %c4_i64 = arith.constant 4 : i64
    %c6_i64 = arith.constant 6 : i64
    %i = kiln.input %arg0[0] : memref<2xi64>
    %s = kiln.input %arg0[1] : memref<2xi64>
    %x = kiln.input %arg0[2] : memref<6xf32>
    %lo = kiln.buffer %arg0 {offset = 0 : i64} : memref<i64>
    kiln.launch %arg0 @minmax(%i, %lo) : memref<2xi64>, memref<i64>
    %k = kiln.input %arg0[3] : memref<i64>
    %kv = memref.load %k[] : memref<i64>
    %kok = arith.cmpi sge, %kv, %c4_i64 : i64
    %l = memref.load %lo[] : memref<i64>
    %ok = arith.cmpi slt, %l, %c4_i64 : i64
    kiln.check %ok, "node 'g' (Gather, opset 17): indices from {0}" (%l : i64) ctx(%arg0)
    kiln.check %kok, "node 't' (TopK, opset 17): K is {0}" (%kv : i64) ctx(%arg0)
    %n = memref.load %s[%c0] : memref<2xi64>
    %same = arith.cmpi eq, %n, %c6_i64 : i64
    kiln.check %same, "node 'r' (Reshape, opset 17): the shape has {0} elements" (%n : i64) ctx(%arg0)
    %ni = arith.index_cast %n : i64 to index
    %v = memref.reinterpret_cast %x to offset: [0], sizes: [%ni], strides: [1] : memref<6xf32> to memref<?xf32>
    %y = kiln.output %arg0[0] : memref<6xf32>
    return %c0_i32 : i32
  }
}
