// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90' min-threads=2048 warp-reductions=0" --split-input-file | FileCheck %s
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_90' block-size=100" --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: block-size must be a multiple of 32

// CHECK-LABEL: module attributes {{.*}}gpu.container_module{{.*}}kiln.device = "cuda sm_90"{{.*}}kiln.num_weights = 1
// An elementwise kernel: the launcher takes the context first, the linalg op
// becomes one launch of ceil(n / 256) blocks of 256 threads, one thread per
// element, guarded by the flattened iteration count.
// CHECK-LABEL: func.func private @relu
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr, %[[X:.*]]: memref<?x8xf32>, %[[Y:.*]]: memref<?x8xf32>)
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %{{.*}}, %[[C256]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]]
// CHECK: %[[ID:.*]] = arith.addi
// CHECK: arith.cmpi ult, %[[ID]]
// CHECK: scf.if
// CHECK: arith.remui
// CHECK: arith.divui
// CHECK: memref.load %[[X]]
// CHECK: arith.maximumf
// CHECK: memref.store {{.*}}, %[[Y]]
// CHECK-NOT: linalg.generic
// The host program calls the launcher with its context; constants become
// device weights, loads become host reads of device memory.
// CHECK-LABEL: func.func @kiln_model_main
// CHECK: %[[W:.*]] = kiln.weight %arg0 @cst[0] : memref<8xf32>
// CHECK: call @relu(%arg0,
// CHECK: kiln.read %arg0, %{{.*}}[%{{.*}}] : memref<4xi64>
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  memref.global "private" constant @cst : memref<8xf32> = dense<1.0>
  func.func private @relu(%x: memref<?x8xf32>, %y: memref<?x8xf32>) attributes {kiln.kernel} {
    %cst = arith.constant 0.0 : f32
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<?x8xf32>) outs(%y : memref<?x8xf32>) {
    ^bb0(%a: f32, %b: f32):
      %m = arith.maximumf %a, %cst : f32
      linalg.yield %m : f32
    }
    return
  }
  func.func @kiln_model_main(%ctx: !llvm.ptr) -> i32 {
    %c0 = arith.constant 0 : index
    %x = kiln.input %ctx[0] : memref<?x8xf32>
    %w = memref.get_global @cst : memref<8xf32>
    %n = memref.dim %x, %c0 : memref<?x8xf32>
    %y = kiln.output %ctx[0](%n) : memref<?x8xf32>
    kiln.launch %ctx @relu(%x, %y) : memref<?x8xf32>, memref<?x8xf32>
    %s = kiln.buffer %ctx {offset = 0} : memref<4xi64>
    %v = memref.load %s[%c0] : memref<4xi64>
    %r = arith.trunci %v : i64 to i32
    return %r : i32
  }
}

// -----

// A reduction: one thread per output, the accumulator in registers across
// the reduction loop (loaded from the fill's value, stored once); the fill
// is absorbed, the scratch allocation becomes a run-scoped kiln.buffer, its
// dealloc goes away, the copy runs in its own launch, and the buffer is
// released when the launcher returns (later kernels reuse its memory).
// CHECK-LABEL: func.func private @rowsum
// CHECK: %[[T:.*]] = kiln.buffer %arg0(%{{.*}}) : memref<?xf32>
// CHECK-NOT: memref.alloc
// CHECK: gpu.launch
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[ZERO:cst[_0-9]*]]) -> (f32)
// CHECK: %[[X:.*]] = memref.load %arg1
// CHECK: %[[S:.*]] = arith.addf %[[X]], %[[ACC]]
// CHECK: scf.yield %[[S]]
// CHECK: memref.store %[[SUM]], %[[T]]
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: memref.load %[[T]]
// CHECK: memref.store {{.*}}, %arg2
// CHECK-NOT: memref.dealloc
// CHECK: gpu.terminator
// CHECK-NEXT: }
// CHECK-NEXT: kiln.release %arg0, %[[T]] : memref<?xf32>
// CHECK-NEXT: return
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
module {
  func.func private @rowsum(%x: memref<?x64xf32>, %y: memref<?xf32>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : index
    %zero = arith.constant 0.0 : f32
    %n = memref.dim %x, %c0 : memref<?x64xf32>
    %t = memref.alloc(%n) : memref<?xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<?xf32>)
    linalg.generic {indexing_maps = [#id2, #row], iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x64xf32>) outs(%t : memref<?xf32>) {
    ^bb0(%a: f32, %acc: f32):
      %s = arith.addf %a, %acc : f32
      linalg.yield %s : f32
    }
    memref.copy %t, %y : memref<?xf32> to memref<?xf32>
    memref.dealloc %t : memref<?xf32>
    return
  }
}

// -----

// A matmul with a fill before and a bias + ReLU after: one launch; each
// thread accumulates 8 rows of outputs (8 registers, reusing each
// loaded element) and stores bias + ReLU of them straight into the output:
// the intermediate buffer is never written and goes away.
// CHECK-LABEL: func.func private @matmul_bias_relu
// CHECK-NOT: kiln.buffer
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-8: arith.mulf
// CHECK: scf.yield
// CHECK-COUNT-8: arith.maximumf
// CHECK-NOT: gpu.launch
// CHECK: return
#mA = affine_map<(d0, d1, d2) -> (d0, d2)>
#mB = affine_map<(d0, d1, d2) -> (d2, d1)>
#mC = affine_map<(d0, d1, d2) -> (d0, d1)>
#e2 = affine_map<(d0, d1) -> (d0, d1)>
#eb = affine_map<(d0, d1) -> (d1)>
module {
  func.func private @matmul_bias_relu(%a: memref<64x32xf32>, %b: memref<32x256xf32>, %bias: memref<256xf32>, %y: memref<64x256xf32>) attributes {kiln.kernel} {
    %zero = arith.constant 0.0 : f32
    %t = memref.alloc() : memref<64x256xf32>
    linalg.fill ins(%zero : f32) outs(%t : memref<64x256xf32>)
    linalg.generic {indexing_maps = [#mA, #mB, #mC], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : memref<64x32xf32>, memref<32x256xf32>) outs(%t : memref<64x256xf32>) {
    ^bb0(%x: f32, %w: f32, %acc: f32):
      %m = arith.mulf %x, %w : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    }
    linalg.generic {indexing_maps = [#e2, #eb, #e2], iterator_types = ["parallel", "parallel"]}
        ins(%t, %bias : memref<64x256xf32>, memref<256xf32>) outs(%y : memref<64x256xf32>) {
    ^bb0(%v: f32, %c: f32, %o: f32):
      %s = arith.addf %v, %c : f32
      %r = arith.maximumf %s, %zero : f32
      linalg.yield %r : f32
    }
    memref.dealloc %t : memref<64x256xf32>
    return
  }
}

// -----

// Scalar accesses outside loops run on one thread, consecutive ones in one
// launch.
// CHECK-LABEL: func.func private @scalars
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:.*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK-NEXT: memref.load
// CHECK-NEXT: arith.addf
// CHECK-NEXT: memref.store
// CHECK-NEXT: gpu.terminator
// CHECK-NOT: gpu.launch
module {
  func.func private @scalars(%x: memref<f32>, %y: memref<f32>) attributes {kiln.kernel} {
    %v = memref.load %x[] : memref<f32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %y[] : memref<f32>
    return
  }
}

// -----

// A loop that picks a buffer from device data, then a parallel loop reading
// the picked buffer in its body: both run in one single-thread launch (the
// buffer is a device value the host never sees).
// CHECK-LABEL: func.func private @picked
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: arith.select
// CHECK: scf.parallel
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK: return
module {
  func.func private @picked(%a: memref<4xf32>, %b: memref<4xf32>, %y: memref<4xf32>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %z = arith.constant 0.0 : f32
    %m = scf.for %i = %c0 to %c4 step %c1 iter_args(%cur = %a) -> (memref<4xf32>) {
      %v = memref.load %cur[%i] : memref<4xf32>
      %p = arith.cmpf ogt, %v, %z : f32
      %n = arith.select %p, %b, %cur : memref<4xf32>
      scf.yield %n : memref<4xf32>
    }
    scf.parallel (%j) = (%c0) to (%c4) step (%c1) {
      %v = memref.load %m[%j] : memref<4xf32>
      memref.store %v, %y[%j] : memref<4xf32>
      scf.reduce
    }
    return
  }
}

// -----

// An If whose branch sizes a buffer at run time (an If with symbolic
// outputs, as silero-vad's) stays on the host even though its branch reads
// device data: device code cannot allocate. The branch's buffer is a
// run-scoped device buffer, its load a host read, its elementwise op a launch.
// The branch yields that buffer, so it is not released at the branch's end
// (the run's end frees it).
// CHECK-LABEL: func.func private @if_allocates
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr,
// CHECK-NOT: gpu.launch
// CHECK: scf.if
// CHECK: %[[N:.*]] = kiln.read %[[CTX]]
// CHECK: %[[B:.*]] = kiln.buffer %[[CTX]](%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch
// CHECK: gpu.terminator
// CHECK-NOT: kiln.release
// CHECK: scf.yield %[[B]]
// CHECK: } else {
// CHECK-NOT: kiln.release
// CHECK: return
module {
  func.func private @if_allocates(%c: i1, %n: memref<1xindex>, %x: memref<?xf32>, %y: memref<?xf32>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.if %c -> (memref<?xf32>) {
      %size = memref.load %n[%c0] : memref<1xindex>
      %buf = memref.alloc(%size) : memref<?xf32>
      scf.parallel (%i) = (%c0) to (%size) step (%c1) {
        %v = memref.load %x[%i] : memref<?xf32>
        %w = arith.addf %v, %v : f32
        memref.store %w, %buf[%i] : memref<?xf32>
        scf.reduce
      }
      scf.yield %buf : memref<?xf32>
    } else {
      scf.yield %x : memref<?xf32>
    }
    %d = memref.dim %r, %c0 : memref<?xf32>
    scf.parallel (%j) = (%c0) to (%d) step (%c1) {
      %v = memref.load %r[%j] : memref<?xf32>
      memref.store %v, %y[%j] : memref<?xf32>
      scf.reduce
    }
    return
  }
}

// -----

// A Loop whose body computes its next condition (slanet's decoder): the
// loop stays on the host (its body sizes a buffer at run time), the
// condition is read on the host, stored into a fresh scalar buffer and
// copied into the carried one by one-thread launches. Each host read of a
// buffer comes after the launch that stores into it: reading the scalar
// buffer before the store's launch got the previous iteration's condition.
// CHECK-LABEL: func.func private @loop_condition
// CHECK-SAME: (%[[CTX:.*]]: !llvm.ptr,
// CHECK: scf.for
// CHECK: %[[GO:.*]] = kiln.read %[[CTX]], %[[COND:.*]][] : memref<i1>
// CHECK: scf.if %[[GO]]
// CHECK: %[[C:.*]] = kiln.read %[[CTX]], %{{.*}}[%{{.*}}] : memref<1xi1>
// CHECK: gpu.launch
// CHECK-NEXT: memref.store %[[C]], %[[TMP:.*]][]
// CHECK-NEXT: gpu.terminator
// CHECK: %[[NEXT:.*]] = kiln.read %[[CTX]], %[[TMP]][] : memref<i1>
// CHECK: gpu.launch
// CHECK-NEXT: memref.store %[[NEXT]], %[[COND]][]
// CHECK-NEXT: gpu.terminator
// The branch's buffer sized at run time is released where the branch ends
// (each iteration allocates it again); the scalar buffers, hoisted to the
// entry block, when the launcher returns.
// CHECK: kiln.release %[[CTX]], %{{.*}} : memref<?xf32>
// CHECK-NEXT: }
// CHECK: kiln.release %[[CTX]], %[[COND]] : memref<i1>
// CHECK: return
#map = affine_map<(d0) -> (d0)>
module {
  func.func private @loop_condition(%cond0: memref<i1>, %n: memref<1xindex>, %t: memref<1xi64>, %x: memref<?xf32>, %out: memref<i1>) attributes {kiln.kernel} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c5 = arith.constant 5 : i64
    %cond = memref.alloc() : memref<i1>
    memref.copy %cond0, %cond : memref<i1> to memref<i1>
    scf.for %i = %c0 to %c8 step %c1 {
      %go = memref.load %cond[] : memref<i1>
      scf.if %go {
        %size = memref.load %n[%c0] : memref<1xindex>
        %buf = memref.alloc(%size) : memref<?xf32>
        linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
            ins(%x : memref<?xf32>) outs(%buf : memref<?xf32>) {
        ^bb0(%a: f32, %b: f32):
          %w = arith.addf %a, %a : f32
          linalg.yield %w : f32
        }
        %lt = memref.alloc() : memref<1xi1>
        linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
            ins(%t : memref<1xi64>) outs(%lt : memref<1xi1>) {
        ^bb0(%a: i64, %b: i1):
          %l = arith.cmpi slt, %a, %c5 : i64
          linalg.yield %l : i1
        }
        %c = memref.load %lt[%c0] : memref<1xi1>
        %tmp = memref.alloc() : memref<i1>
        memref.store %c, %tmp[] : memref<i1>
        linalg.copy ins(%tmp : memref<i1>) outs(%cond : memref<i1>)
      }
    }
    memref.copy %cond, %out : memref<i1> to memref<i1>
    return
  }
}

// -----

// A max pool over a copy padded with -inf (ResNet-50's 3x3 stride-2 pool
// after the stem): the reduction reads the input itself, shifted by the
// padding and bounds-checked, -inf outside; the fill, the copy and the
// padded buffer go away.
// CHECK-LABEL: func.func private @padded_max_pool
// CHECK-NOT: memref<2x10x10x16xf16>
// CHECK: gpu.launch
// CHECK: scf.for
// CHECK: arith.subi %{{.*}}, %c1
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: %[[V:.*]] = memref.load %arg1[
// CHECK: arith.select %{{.*}}, %[[V]], %[[NEGINF:.*]] : f16
// CHECK: arith.maximumf
// CHECK: memref.store %{{.*}}, %arg2
// CHECK-NOT: gpu.launch
// CHECK: return
#pin = affine_map<(n, h, w, c, kh, kw) -> (n, h * 2 + kh, w * 2 + kw, c)>
#pwin = affine_map<(n, h, w, c, kh, kw) -> (kh, kw)>
#pout = affine_map<(n, h, w, c, kh, kw) -> (n, h, w, c)>
module {
  func.func private @padded_max_pool(%x: memref<2x8x8x16xf16>, %y: memref<2x4x4x16xf16>) attributes {kiln.kernel} {
    %ninf = arith.constant 0xFC00 : f16
    %p = memref.alloc() : memref<2x10x10x16xf16>
    linalg.map outs(%p : memref<2x10x10x16xf16>)
      (%init: f16) {
        linalg.yield %ninf : f16
      }
    %v = memref.subview %p[0, 1, 1, 0] [2, 8, 8, 16] [1, 1, 1, 1] : memref<2x10x10x16xf16> to memref<2x8x8x16xf16, strided<[1600, 160, 16, 1], offset: 176>>
    memref.copy %x, %v : memref<2x8x8x16xf16> to memref<2x8x8x16xf16, strided<[1600, 160, 16, 1], offset: 176>>
    %win = memref.alloc() : memref<3x3xf16>
    linalg.fill ins(%ninf : f16) outs(%y : memref<2x4x4x16xf16>)
    linalg.generic {indexing_maps = [#pin, #pwin, #pout], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
        ins(%p, %win : memref<2x10x10x16xf16>, memref<3x3xf16>) outs(%y : memref<2x4x4x16xf16>) {
    ^bb0(%a: f16, %b: f16, %acc: f16):
      %m = arith.maximumf %acc, %a : f16
      linalg.yield %m : f16
    }
    return
  }
}

// -----

// A large elementwise kernel (2^20 elements, static): four iterations per
// thread (ceil(n / 1024) blocks of 256 threads), iterations id + 256 j.
// The body is cloned op by op for the four, so their loads come before
// their stores; an iteration past the end computes as the last one
// (min with n - 1) and does not store (each store guarded).
// CHECK-LABEL: func.func private @quantize_large
// CHECK: arith.constant 256 : index
// CHECK-NEXT: %[[PER:.*]] = arith.constant 1024 : index
// CHECK-NEXT: %[[N:.*]] = arith.ceildivsi %{{.*}}, %[[PER]] : index
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: arith.muli %[[BX]], %[[PER]] : index
// CHECK-COUNT-4: arith.minui
// CHECK-COUNT-4: memref.load %{{.*}} : memref<1024x1024xf32>
// CHECK-COUNT-4: math.roundeven
// CHECK: scf.if
// CHECK-NEXT: memref.store %{{.*}} : memref<1024x1024xi8>
// CHECK: scf.if
// CHECK-NEXT: memref.store
// CHECK: scf.if
// CHECK-NEXT: memref.store
// CHECK: scf.if
// CHECK-NEXT: memref.store
// CHECK-NOT: memref.store
// CHECK: gpu.terminator
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @quantize_large(%x: memref<1024x1024xf32>, %y: memref<1024x1024xi8>) attributes {kiln.kernel} {
    %s = arith.constant 0.05 : f32
    linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<1024x1024xf32>) outs(%y : memref<1024x1024xi8>) {
    ^bb0(%a: f32, %b: i8):
      %q = arith.divf %a, %s : f32
      %r = math.roundeven %q : f32
      %i = arith.fptosi %r : f32 to i8
      linalg.yield %i : i8
    }
    return
  }
}
