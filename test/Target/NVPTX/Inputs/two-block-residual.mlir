// A ResNet block's end in int8 (its 1x1 expansion, one K step of 64): the
// u8 x s8 product dequantized by a per-column scale and bias, a u8 residual
// with its zero point added, ReLU, and the u8 quantization of the sum.
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#e = affine_map<(m, n) -> (m, n)>
#col = affine_map<(m, n) -> (n)>
module {
  func.func private @block_end(%x: memref<8192x64xi8>, %w: memref<64x256xi8>, %scale: memref<256xf32>, %bias: memref<256xf32>, %res: memref<8192x256xi8>, %y: memref<8192x256xi8>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    %rzp = arith.constant 3.0 : f32
    %rs = arith.constant 0.05 : f32
    %inv = arith.constant 20.0 : f32
    %zp = arith.constant 3.0 : f32
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 255.0 : f32
    %acc = memref.alloc() : memref<8192x256xi32>
    linalg.fill ins(%zero : i32) outs(%acc : memref<8192x256xi32>)
    linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %w : memref<8192x64xi8>, memref<64x256xi8>) outs(%acc : memref<8192x256xi32>) {
    ^bb0(%xv: i8, %wv: i8, %s: i32):
      %xe = arith.extui %xv : i8 to i32
      %we = arith.extsi %wv : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    linalg.generic {indexing_maps = [#e, #col, #col, #e, #e], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %scale, %bias, %res : memref<8192x256xi32>, memref<256xf32>, memref<256xf32>, memref<8192x256xi8>) outs(%y : memref<8192x256xi8>) {
    ^bb0(%a: i32, %sc: f32, %bi: f32, %rv: i8, %o: i8):
      %0 = arith.sitofp %a : i32 to f32
      %1 = arith.mulf %0, %sc : f32
      %2 = arith.addf %1, %bi : f32
      %3 = arith.uitofp %rv : i8 to f32
      %4 = arith.subf %3, %rzp : f32
      %5 = arith.mulf %4, %rs : f32
      %6 = arith.addf %2, %5 : f32
      %7 = arith.maximumf %6, %lo : f32
      %8 = arith.mulf %7, %inv : f32
      %9 = math.roundeven %8 : f32
      %10 = arith.addf %9, %zp : f32
      %11 = arith.maximumf %10, %lo : f32
      %12 = arith.minimumf %11, %hi : f32
      %13 = arith.fptosi %12 : f32 to i32
      %14 = arith.trunci %13 : i32 to i8
      linalg.yield %14 : i8
    }
    memref.dealloc %acc : memref<8192x256xi32>
    return
  }
}
