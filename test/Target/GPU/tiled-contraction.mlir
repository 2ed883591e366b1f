// Tiled contractions on the GPU: the tile and the K split follow the
// problem's shape (fill-blocks: the blocks that fill the GPU).
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="fill-blocks=264" --split-input-file | FileCheck %s

// Enough 128x128 tiles (4 per matrix x 64 matrices): 256 threads of 8x8
// outputs each, two shared buffers of 8 K-rows (padded to 132) per operand,
// 4-wide vector reads, one barrier per step, the next slab's loads issued
// before this one's products, bias + ReLU fused into the stores.
// CHECK-LABEL: func.func private @bmm_bias_relu
// CHECK-NOT: kiln.buffer
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c2{{.*}}, {{.*}} = %c2{{.*}}, {{.*}} = %c64{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME: workgroup(%[[XS:.*]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-4: memref.store {{.*}}, %[[XS]]
// CHECK-COUNT-4: memref.store {{.*}}, %[[WS]]
// CHECK: gpu.barrier
// CHECK-NOT: gpu.barrier
// CHECK: scf.if
// CHECK-COUNT-8: memref.load
// CHECK: vector.load %[[XS]]{{.*}} {alignment = 16 : i64} : memref<2x8x132xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-64: arith.addf
// CHECK-NOT: gpu.barrier
// CHECK: scf.yield
// CHECK-COUNT-64: arith.maximumf
// CHECK-NOT: gpu.launch
// CHECK: return
#a = affine_map<(b, m, n, k) -> (b, m, k)>
#w = affine_map<(b, m, n, k) -> (b, k, n)>
#o = affine_map<(b, m, n, k) -> (b, m, n)>
#e = affine_map<(b, m, n) -> (b, m, n)>
#bias = affine_map<(b, m, n) -> (n)>
module {
  func.func private @bmm_bias_relu(%x: memref<64x256x64xf32>, %y: memref<64x64x256xf32>, %c: memref<256xf32>, %out: memref<64x256x256xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<64x256x256xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64x256x256xf32>)
    linalg.generic {indexing_maps = [#a, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
        ins(%x, %y : memref<64x256x64xf32>, memref<64x64x256xf32>) outs(%t : memref<64x256x256xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e, #bias, #e], iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%t, %c : memref<64x256x256xf32>, memref<256xf32>) outs(%out : memref<64x256x256xf32>) {
    ^bb0(%v: f32, %b: f32, %o: f32):
      %s = arith.addf %v, %b : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<64x256x256xf32>
    return
  }
}

// -----

// 8 tiles of 64x64 and a long K (ResNet-50's last 3x3 convolutions at
// batch 1): K split 32 ways into parts of 144 (a multiple of the 16-step
// slab), summed into scratch; a second launch adds the parts, the fill
// value and the epilogue.
// CHECK-LABEL: func.func private @split_k
// CHECK: %[[PARTS:.*]] = kiln.buffer %arg0 : memref<32x64x512xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c8{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c32{{.*}}) threads({{.*}}) in ({{.*}} = %c256
// CHECK-SAME: workgroup({{.*}} : memref<2x16x68xf32, #gpu.address_space<workgroup>>, {{.*}} : memref<2x16x68xf32, #gpu.address_space<workgroup>>)
// CHECK: arith.remui %{{.*}}, %c32
// CHECK: arith.muli %{{.*}}, %c144
// CHECK: scf.for
// CHECK: memref.store {{.*}}, %[[PARTS]]
// CHECK-NOT: arith.maximumf
// CHECK: gpu.terminator
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c128{{.*}}, {{.*}} = %c1{{.*}}, {{.*}} = %c1{{.*}})
// CHECK-COUNT-32: memref.load %[[PARTS]]
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %arg3
// CHECK: gpu.terminator
#a2 = affine_map<(m, n, k) -> (m, k)>
#w2 = affine_map<(m, n, k) -> (k, n)>
#o2 = affine_map<(m, n, k) -> (m, n)>
#e2 = affine_map<(m, n) -> (m, n)>
module {
  func.func private @split_k(%x: memref<64x4608xf32>, %y: memref<4608x512xf32>, %out: memref<64x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<64x512xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64x512xf32>)
    linalg.generic {indexing_maps = [#a2, #w2, #o2], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %y : memref<64x4608xf32>, memref<4608x512xf32>) outs(%t : memref<64x512xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %m = arith.mulf %p, %q : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e2, #e2], iterator_types = ["parallel", "parallel"]}
        ins(%t : memref<64x512xf32>) outs(%out : memref<64x512xf32>) {
    ^bb0(%v: f32, %o: f32):
      %r = arith.maximumf %v, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<64x512xf32>
    return
  }
}

// -----

// A body that is not a multiply-accumulate (max-plus) with K = 100, not a
// multiple of the slab: zero padding would change it, so no shared tiles.
// CHECK-LABEL: func.func private @max_plus
// CHECK-NOT: workgroup
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: arith.maximumf
// CHECK: return
#a3 = affine_map<(m, n, k) -> (m, k)>
#w3 = affine_map<(m, n, k) -> (k, n)>
#o3 = affine_map<(m, n, k) -> (m, n)>
module {
  func.func private @max_plus(%x: memref<512x100xf32>, %y: memref<100x512xf32>, %out: memref<512x512xf32>) attributes {kiln.kernel} {
    %ninf = arith.constant 0xFF800000 : f32
    linalg.fill ins(%ninf : f32) outs(%out : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#a3, #w3, #o3], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %y : memref<512x100xf32>, memref<100x512xf32>) outs(%out : memref<512x512xf32>) {
    ^bb0(%p: f32, %q: f32, %acc: f32):
      %s = arith.addf %p, %q : f32
      %r = arith.maximumf %acc, %s : f32
      linalg.yield %r : f32
    }
    return
  }
}

// -----

// A producer fused into the contraction (bias + ReLU on X, casts to half on
// both sides, as --precision=fp16 leaves them): the staged value is the
// product's operand computed from each side's inputs, here the half values
// before their extension, so the product runs on tensor cores.
// CHECK-LABEL: func.func private @fused_producer
// CHECK: gpu.launch {{.*}} workgroup(%[[XS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>, %[[WS:.*]] : memref<2x64x40xf16, #gpu.address_space<workgroup>>)
// CHECK: memref.load %arg1
// CHECK: memref.load %arg2
// CHECK: arith.addf
// CHECK: arith.maximumf
// CHECK: arith.truncf
// CHECK: memref.load %arg3
// CHECK: arith.truncf
// CHECK: scf.for
// CHECK: memref.store {{.*}}, %[[XS]]
// CHECK: nvvm.mma.sync
// CHECK-NOT: arith.maximumf
// CHECK: scf.yield
#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (k)>
#w4 = affine_map<(m, n, k) -> (k, n)>
#o4 = affine_map<(m, n, k) -> (m, n)>
module {
  func.func private @fused_producer(%x: memref<512x96xf32>, %bias: memref<96xf32>, %y: memref<96x512xf32>, %out: memref<512x512xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    linalg.fill ins(%zero : f32) outs(%out : memref<512x512xf32>)
    linalg.generic {indexing_maps = [#a4, #b4, #w4, #o4], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%x, %bias, %y : memref<512x96xf32>, memref<96xf32>, memref<96x512xf32>) outs(%out : memref<512x512xf32>) {
    ^bb0(%p: f32, %c: f32, %q: f32, %acc: f32):
      %s = arith.addf %p, %c : f32
      %r = arith.maximumf %s, %zero : f32
      %rh = arith.truncf %r : f32 to f16
      %qh = arith.truncf %q : f32 to f16
      %re = arith.extf %rh : f16 to f32
      %qe = arith.extf %qh : f16 to f32
      %m = arith.mulf %re, %qe : f32
      %t = arith.addf %acc, %m : f32
      linalg.yield %t : f32
    }
    return
  }
}

// -----

// A 3x3 convolution (NHWC, HWCF weights) reading its input through a
// zero-padded copy (what a padded Conv bufferizes to inside its kernel):
// the tiles read the unpadded input, its rows and columns shifted by the
// padding and bounds-checked (zero outside), and the fill, the copy and
// their 130x130 scratch buffer go away.
// CHECK-LABEL: func.func private @padded_conv
// CHECK-NOT: kiln.buffer
// CHECK-NOT: memref<1x130x130x64xf32>
// CHECK: gpu.launch
// CHECK: arith.subi %{{.*}}, %c1
// CHECK: arith.cmpi ult, %{{.*}}, %c128
// CHECK: memref.load %arg1[
// CHECK: arith.select
// CHECK: scf.for
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
#ci = affine_map<(n, h, w, f, kh, kw, c) -> (n, h + kh, w + kw, c)>
#cw = affine_map<(n, h, w, f, kh, kw, c) -> (kh, kw, c, f)>
#co = affine_map<(n, h, w, f, kh, kw, c) -> (n, h, w, f)>
module {
  func.func private @padded_conv(%x: memref<1x128x128x64xf32>, %w: memref<3x3x64x128xf32>, %y: memref<1x128x128x128xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %p = memref.alloc() : memref<1x130x130x64xf32>
    linalg.fill ins(%zero : f32) outs(%p : memref<1x130x130x64xf32>)
    %v = memref.subview %p[0, 1, 1, 0] [1, 128, 128, 64] [1, 1, 1, 1] : memref<1x130x130x64xf32> to memref<1x128x128x64xf32, strided<[1081600, 8320, 64, 1], offset: 8384>>
    memref.copy %x, %v : memref<1x128x128x64xf32> to memref<1x128x128x64xf32, strided<[1081600, 8320, 64, 1], offset: 8384>>
    linalg.fill ins(%zero : f32) outs(%y : memref<1x128x128x128xf32>)
    linalg.generic {indexing_maps = [#ci, #cw, #co], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
        ins(%p, %w : memref<1x130x130x64xf32>, memref<3x3x64x128xf32>) outs(%y : memref<1x128x128x128xf32>) {
    ^bb0(%a: f32, %b: f32, %acc: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    memref.dealloc %p : memref<1x130x130x64xf32>
    return
  }
}
