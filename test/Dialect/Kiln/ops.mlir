// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// CHECK-LABEL: func @kernel_roundtrip
func.func @kernel_roundtrip(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %n: index) -> tensor<?x4xf32> {
  // CHECK: kiln.kernel "k0" ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xf32>, tensor<8x4xf32>, index) dims(%{{.*}}) -> (tensor<?x4xf32>)
  %r = kiln.kernel "k0" ins(%x, %w, %n : tensor<?x8xf32>, tensor<8x4xf32>, index) dims(%n) -> (tensor<?x4xf32>) {
  ^bb0(%a: tensor<?x8xf32>, %b: tensor<8x4xf32>, %m: index):
    %cst = arith.constant 0.0 : f32
    %e = tensor.empty(%m) : tensor<?x4xf32>
    %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
    %mm = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
    // CHECK: kiln.yield %{{.*}} : tensor<?x4xf32>
    kiln.yield %mm : tensor<?x4xf32>
  }
  return %r : tensor<?x4xf32>
}

// CHECK-LABEL: func @kernel_no_name_static
func.func @kernel_no_name_static(%x: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: kiln.kernel ins(%{{.*}} : tensor<4xf32>) -> (tensor<4xf32>)
  %r = kiln.kernel ins(%x : tensor<4xf32>) -> (tensor<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    kiln.yield %a : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

func.func private @k(memref<?x8xf32>, memref<?x8xf32>)

// CHECK-LABEL: func @host
func.func @host(%ctx: !llvm.ptr) -> i32 {
  // CHECK: %[[X:.*]] = kiln.input %{{.*}}[0] : memref<?x8xf32>
  %x = kiln.input %ctx [0] : memref<?x8xf32>
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  // CHECK: kiln.buffer %{{.*}} {offset = 64 : i64} : memref<4x8xf32>
  %t = kiln.buffer %ctx {offset = 64} : memref<4x8xf32>
  // CHECK: kiln.buffer %{{.*}}(%{{.*}}) : memref<?x8xf32>
  %u = kiln.buffer %ctx (%n) : memref<?x8xf32>
  // CHECK: kiln.output %{{.*}}[0] (%{{.*}}) : memref<?x8xf32>
  %y = kiln.output %ctx [0] (%n) : memref<?x8xf32>
  // CHECK: kiln.launch %{{.*}} @k(%[[X]], %{{.*}}) : memref<?x8xf32>, memref<?x8xf32>
  kiln.launch %ctx @k(%x, %y) : memref<?x8xf32>, memref<?x8xf32>
  // CHECK: kiln.release %{{.*}}, %{{.*}} : memref<?x8xf32>
  kiln.release %ctx, %u : memref<?x8xf32>
  %z = arith.constant 0 : i32
  return %z : i32
}
