// GEMMs for the sm_90a warpgroup-MMA kernel: full tiles, partial tiles
// (3136 rows), and a fill of 0.5 (wgmma-serialization.test).
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @part(%a: memref<3136x512xf16>, %b: memref<512x2048xf16>, %y: memref<3136x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<3136x2048xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<3136x512xf16>, memref<512x2048xf16>) outs(%y : memref<3136x2048xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @full(%a: memref<4096x512xf16>, %b: memref<512x2048xf16>, %y: memref<4096x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<4096x2048xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<4096x512xf16>, memref<512x2048xf16>) outs(%y : memref<4096x2048xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @filled(%a: memref<1024x256xf16>, %b: memref<256x1024xf16>, %y: memref<1024x1024xf32>) attributes {kiln.kernel} {
    %half = arith.constant 0.5 : f32
    linalg.fill ins(%half : f32) outs(%y : memref<1024x1024xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<1024x256xf16>, memref<256x1024xf16>) outs(%y : memref<1024x1024xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}
