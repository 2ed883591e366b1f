// 8-bit GEMMs for the sm_90a warpgroup-MMA kernel (wgmma-serialization.test):
// u8 x s8 with partial tiles (3136 rows) and a scaled epilogue, s8 x s8
// with a fill of 7, split K, one K step of 64 (persistent with
// persistent=on: 128 x 128 tiles, two stages and a staging area past them),
// and 3x3 convolutions of 64 and 32 channels (K steps of 64 bytes, 64-byte
// swizzle; 784 tiles of 256 x 64, persistent under auto).
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#mN = affine_map<(d0, d1) -> (d1)>
#mI = affine_map<(d0, d1) -> (d0, d1)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#in3 = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 + d4, d2 + d5, d6)>
#fhwc = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4, d5, d6)>
#out = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
module {
  func.func private @int8_part(%a: memref<3136x512xi8>, %b: memref<512x1024xi8>, %bias: memref<1024xi32>, %scale: memref<1024xf32>, %y: memref<3136x1024xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    %acc = memref.alloc() : memref<3136x1024xi32>
    linalg.fill ins(%zero : i32) outs(%acc : memref<3136x1024xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<3136x512xi8>, memref<512x1024xi8>) outs(%acc : memref<3136x1024xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    linalg.generic {indexing_maps = [#mI, #mN, #mN, #mI], iterator_types = ["parallel", "parallel"]}
        ins(%acc, %bias, %scale : memref<3136x1024xi32>, memref<1024xi32>, memref<1024xf32>) outs(%y : memref<3136x1024xf32>) {
    ^bb0(%v: i32, %bv: i32, %sc: f32, %o: f32):
      %t = arith.addi %v, %bv : i32
      %f = arith.sitofp %t : i32 to f32
      %q = arith.mulf %f, %sc : f32
      linalg.yield %q : f32
    }
    memref.dealloc %acc : memref<3136x1024xi32>
    return
  }
  func.func private @int8_filled(%a: memref<2048x512xi8>, %b: memref<512x512xi8>, %y: memref<2048x512xi32>) attributes {kiln.kernel} {
    %seven = arith.constant 7 : i32
    linalg.fill ins(%seven : i32) outs(%y : memref<2048x512xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<2048x512xi8>, memref<512x512xi8>) outs(%y : memref<2048x512xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extsi %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @int8_splitk(%a: memref<128x4096xi8>, %b: memref<4096x128xi8>, %y: memref<128x128xi32>) attributes {kiln.kernel} {
    %five = arith.constant 5 : i32
    linalg.fill ins(%five : i32) outs(%y : memref<128x128xi32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<128x4096xi8>, memref<4096x128xi8>) outs(%y : memref<128x128xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @int8_one_step(%a: memref<200704x64xi8>, %b: memref<256x64xi8>, %y: memref<200704x256xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<200704x256xi32>)
    linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]} ins(%a, %b : memref<200704x64xi8>, memref<256x64xi8>) outs(%y : memref<200704x256xi32>) {
    ^bb0(%x: i8, %w: i8, %s: i32):
      %xe = arith.extui %x : i8 to i32
      %we = arith.extsi %w : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @int8_conv_c64(%x: memref<64x58x58x64xi8>, %w: memref<64x3x3x64xi8>, %y: memref<64x56x56x64xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<64x56x56x64xi32>)
    linalg.generic {indexing_maps = [#in3, #fhwc, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<64x58x58x64xi8>, memref<64x3x3x64xi8>) outs(%y : memref<64x56x56x64xi32>) {
    ^bb0(%xv: i8, %wv: i8, %s: i32):
      %xe = arith.extui %xv : i8 to i32
      %we = arith.extsi %wv : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
  func.func private @int8_conv_c32(%x: memref<64x58x58x32xi8>, %w: memref<64x3x3x32xi8>, %y: memref<64x56x56x64xi32>) attributes {kiln.kernel} {
    %zero = arith.constant 0 : i32
    linalg.fill ins(%zero : i32) outs(%y : memref<64x56x56x64xi32>)
    linalg.generic {indexing_maps = [#in3, #fhwc, #out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%x, %w : memref<64x58x58x32xi8>, memref<64x3x3x32xi8>) outs(%y : memref<64x56x56x64xi32>) {
    ^bb0(%xv: i8, %wv: i8, %s: i32):
      %xe = arith.extui %xv : i8 to i32
      %we = arith.extsi %wv : i8 to i32
      %m = arith.muli %xe, %we : i32
      %r = arith.addi %s, %m : i32
      linalg.yield %r : i32
    }
    return
  }
}
