// GEMMs for mma-async.mlir's ptxas run: f16 at the 128 tile (3 stages, B
// N-major: ldmatrix .trans), bf16 at the 64 tile (4 stages, B K-major).
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mBt = affine_map<(d0, d1, d2) -> (d1, d2)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
module {
  func.func private @big16(%a: memref<2048x256xf16>, %b: memref<256x2048xf16>, %y: memref<2048x2048xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<2048x2048xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<2048x256xf16>, memref<256x2048xf16>) outs(%y : memref<2048x2048xf32>) {
    ^bb0(%x: f16, %w: f16, %acc: f32):
      %xe = arith.extf %x : f16 to f32
      %we = arith.extf %w : f16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
  func.func private @nt_bf16(%a: memref<512x256xbf16>, %b: memref<512x256xbf16>, %y: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%y : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#mA, #mBt, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<512x256xbf16>, memref<512x256xbf16>) outs(%y : memref<512x512xf32>) {
    ^bb0(%x: bf16, %w: bf16, %acc: f32):
      %xe = arith.extf %x : bf16 to f32
      %we = arith.extf %w : bf16 to f32
      %m = arith.mulf %xe, %we : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    return
  }
}
