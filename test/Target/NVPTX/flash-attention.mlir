// kiln.attention as one fused kernel (lib/Target/GPU/FlashAttention.cpp)
// down to the PTX; one launch of 4 warps per 64 query rows; K and V tiles of 64
// keys copied to two shared buffers each by 16-byte asynchronous copies
// (cp.async: the first two tiles' start before Q's loads, tile t + 2's once
// every warp is done with tile t's buffer), or, where the strides are
// unknown, loaded element by element into registers and stored to one
// buffer; S = Q·Kᵀ and
// O += P·V on mma.sync m16n8k16 with f32 accumulators, their B registers
// from ldmatrix (K's rows as they are, V's transposed: 4 x4 loads of each
// per 16 keys); the running row max and the final row sums across the
// lanes of a row by xor shuffles; exp2; no buffer of scores. A kernel
// whose output goes through an epilogue (the quantization for an int8
// product) with heads of up to 64 asks for four blocks a multiprocessor
// (`kiln.kernel_attrs`, which kiln-outline-gpu-kernels puts on the kernel:
// PTX .minnctapersm 4, so at most 128 registers a thread); the others
// do not. Where the output's rows hold runs of 16 bytes and the static
// shared memory allows, each warp writes its rows to a staging buffer as
// the fragments hold them and, after a barrier, stores them 16 bytes a
// lane (whole rows a warp store).
// RUN: kiln-opt %s --split-input-file --kiln-map-kernels-to-gpu="device='cuda sm_80'" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_80'}, canonicalize, gpu-launch-sink-index-computations, kiln-outline-gpu-kernels, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_80 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" --split-input-file | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX
// RUN: not kiln-opt %s --split-input-file --kiln-map-kernels-to-gpu="device='cuda sm_75'" 2>&1 | FileCheck %s --check-prefix=SM75

// IR-LABEL: func.func private @bhsd
// IR-NOT: kiln.buffer
// IR: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c128, {{.*}}) workgroup(%[[KS:.*]] : memref<128x72xf16, #gpu.address_space<workgroup>>, %[[VS:.*]] : memref<128x72xf16, #gpu.address_space<workgroup>>, %[[OS:.*]] : memref<64x64xf16, #gpu.address_space<workgroup>>)
// The first two tiles (S = 128: both), 4 copies of K and 4 of V a thread
// each, one group each; the second only where there is one.
// IR-COUNT-8: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// IR: nvvm.cp.async.commit.group
// IR: scf.if
// IR-COUNT-8: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// IR: nvvm.cp.async.commit.group
// Q's registers: one 4-byte load each (16 a lane), while the copies run.
// IR-COUNT-16: vector.load %arg1{{.*}} {alignment = 4 : i64} : memref<2x4x128x64xf16>, vector<2xf16>
// IR-NOT: vector.store
// IR: scf.for
// IR: nvvm.cp.async.wait.group 1
// IR: gpu.barrier
// IR: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<row>, num = 4
// IR-COUNT-32: nvvm.mma.sync
// L = 128 is two full tiles: no key is past L, no bound check.
// IR-NOT: arith.cmpi uge
// IR: gpu.shuffle  xor %{{.*}}, %c1_i32
// IR: gpu.shuffle  xor %{{.*}}, %c2_i32
// IR: math.exp2
// IR: nvvm.ldmatrix {{.*}} layout = #nvvm.mma_layout<col>, num = 4
// IR-COUNT-32: nvvm.mma.sync
// Tile t + 2 (if any) into this tile's buffer once every warp is done.
// IR: scf.if
// IR-NEXT: gpu.barrier
// IR-COUNT-8: nvvm.cp.async.shared.global
// IR: nvvm.cp.async.commit.group
// IR-NEXT: scf.yield
// IR: nvvm.cp.async.wait.group 0
// IR: gpu.shuffle  xor
// IR: arith.truncf %{{.*}} : f32 to f16
// The rows to the staging buffer in pairs (no bound check), a barrier,
// then 4 runs of 8 a lane (16 x 64 halves a warp) to the output.
// IR-COUNT-16: vector.store %{{.*}}, %[[OS]][{{.*}}] {alignment = 4 : i64} : memref<64x64xf16, #gpu.address_space<workgroup>>, vector<2xf16>
// IR-NOT: vector.store %{{.*}}, %arg4
// IR: gpu.barrier
// IR-COUNT-4: vector.store %{{.*}}, %arg4[{{.*}}] {alignment = 16 : i64} : memref<2x4x128x64xf16>, vector<8xf16>
// IR-NOT: vector.store
// IR-NOT: gpu.launch
// IR: return

// PTX-LABEL: .visible .entry bhsd_kernel(
// PTX-NOT: .minnctapersm
// PTX-DAG: .shared .align 16 .b8 __wg_bhsd_kernel_0[18432]
// PTX-DAG: .shared .align 16 .b8 __wg_bhsd_kernel_2[8192]
// PTX-DAG: st.global.v4.b32
// PTX-DAG: cp.async.cg.shared.global [%{{.*}}], [%{{.*}}], 16, 16;
// PTX-DAG: cp.async.wait_group 1
// PTX-DAG: bar.sync
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// PTX-DAG: ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-DAG: shfl.sync.bfly.b32
// PTX-DAG: {{ex2.approx.f32|__nv_exp2f}}
// PTX-DAG: cvt.rn.f16x2.f32
// PTX: ret;

// SM75: error: fused attention needs the target's matrix instruction for 'f16' operands and f32 accumulators
func.func private @bhsd(%q: memref<2x4x128x64xf16>, %k: memref<2x4x128x64xf16>, %v: memref<2x4x128x64xf16>, %o: memref<2x4x128x64xf16>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %v : memref<2x4x128x64xf16>, memref<2x4x128x64xf16>, memref<2x4x128x64xf16>) outs(%o : memref<2x4x128x64xf16>) scale = 1.250000e-01 seq_major = [false, false, false, false]
  return
}

// -----

// [B, S, H, D] views of 3-D operands (bf16, 8 query heads on 2 key/value
// heads, head size 32), an additive f32 mask [1, 1, S, L] and causality:
// the K and V views' strides are static multiples of 16 bytes (16-byte
// copies); key tiles end at the block's last query row; the mask is read at
// (0, 0, row, key) and the keys past the query row and past L are -inf.
// IR-LABEL: func.func private @views_mask_causal
// IR: gpu.launch {{.*}} workgroup(%{{.*}} : memref<128x40xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<128x40xbf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x32xbf16, #gpu.address_space<workgroup>>)
// IR: arith.divui %{{.*}}, %c4
// IR: nvvm.cp.async.shared.global
// IR: arith.minui
// IR: scf.for
// IR: nvvm.mma.sync {{.*}} {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>
// IR: memref.load %arg4[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x1x77x77xf32>
// IR: arith.cmpi uge
// IR: arith.cmpi ugt
// IR: math.exp2
// IR: gpu.barrier
// IR: vector.store %{{.*}}, %arg5[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<1x77x8x32xbf16, strided<[19712, 256, 32, 1]>>, vector<8xbf16>
// PTX-LABEL: .visible .entry views_mask_causal_kernel(
// PTX-DAG: cp.async.cg.shared.global
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
// PTX-DAG: shfl.sync.bfly.b32
func.func private @views_mask_causal(%q: memref<1x77x8x32xbf16, strided<[19712, 256, 32, 1]>>, %k: memref<1x77x2x32xbf16, strided<[4928, 64, 32, 1]>>, %v: memref<1x77x2x32xbf16, strided<[4928, 64, 32, 1]>>, %m: memref<1x1x77x77xf32>, %o: memref<1x77x8x32xbf16, strided<[19712, 256, 32, 1]>>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %v, mask %m : memref<1x77x8x32xbf16, strided<[19712, 256, 32, 1]>>, memref<1x77x2x32xbf16, strided<[4928, 64, 32, 1]>>, memref<1x77x2x32xbf16, strided<[4928, 64, 32, 1]>>, memref<1x1x77x77xf32>) outs(%o : memref<1x77x8x32xbf16, strided<[19712, 256, 32, 1]>>) scale = 1.767767e-01 causal seq_major = [true, true, true, true]
  return
}

// -----

// K and V whose strides the types do not give: element loads.
// IR-LABEL: func.func private @dynamic_strides
// IR-NOT: vector.load {{.*}} vector<8xf16>
// IR: gpu.launch
// IR-NOT: vector.load {{.*}} vector<8xf16>
// IR: vector.from_elements {{.*}} : vector<8xf16>
// IR: nvvm.mma.sync
func.func private @dynamic_strides(%q: memref<1x2x16x64xf16>, %k: memref<1x2x16x64xf16, strided<[?, ?, ?, 1], offset: ?>>, %o: memref<1x2x16x64xf16>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %k : memref<1x2x16x64xf16>, memref<1x2x16x64xf16, strided<[?, ?, ?, 1], offset: ?>>, memref<1x2x16x64xf16, strided<[?, ?, ?, 1], offset: ?>>) outs(%o : memref<1x2x16x64xf16>) scale = 1.250000e-01 seq_major = [false, false, false, false]
  return
}

// -----

// Q, K and V as views of one packed QKV projection [B, S, 3·H·D]
// (kiln-view-windows): static offsets of H·D and 2·H·D elements, multiples
// of 16 bytes, so K and V still take 16-byte copies, and Q is read at its
// offset; the PTX builds.
// IR-LABEL: func.func private @packed_qkv
// IR: gpu.launch
// IR: memref.extract_aligned_pointer_as_index {{.*}} : memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>> -> index
// IR: nvvm.cp.async.shared.global
// IR: memref.extract_aligned_pointer_as_index {{.*}} : memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>> -> index
// IR: nvvm.cp.async.shared.global
// IR: nvvm.mma.sync
// PTX-LABEL: .visible .entry packed_qkv_kernel(
// PTX: cp.async.cg.shared.global
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ret;
func.func private @packed_qkv(%qkv: memref<2x16x192xf16>, %o: memref<2x16x2x32xf16>) attributes {kiln.kernel} {
  %q = memref.subview %qkv[0, 0, 0] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1]>>
  %k = memref.subview %qkv[0, 0, 64] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>>
  %v = memref.subview %qkv[0, 0, 128] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>>
  %q4 = memref.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1]>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>
  %k4 = memref.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>
  %v4 = memref.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>
  kiln.attention ins(%q4, %k4, %v4 : memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>) outs(%o : memref<2x16x2x32xf16>) scale = 1.767767e-01 seq_major = [true, true, true, true]
  return
}

// -----

// Heads of 128: two buffers of K and V tiles would take 68 KiB of shared
// memory, past the 48 KiB a block may take statically (ptxas refused the
// kernel): one buffer each (34 KiB), filled through registers by 16-byte
// loads; the PTX builds.
// IR-LABEL: func.func private @head128
// IR: gpu.launch {{.*}} workgroup(%{{.*}} : memref<64x136xf16, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x136xf16, #gpu.address_space<workgroup>>)
// IR-NOT: nvvm.cp.async
// IR: vector.load %arg2{{.*}} : memref<2x4x130x128xf16>, vector<8xf16>
// IR: nvvm.mma.sync
// IR: return
// PTX-LABEL: .visible .entry head128_kernel(
// PTX-NOT: .minnctapersm
// PTX: .shared .align 16 .b8 __wg_head128_kernel_0[17408]
// PTX-NOT: cp.async
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ret;
func.func private @head128(%q: memref<2x4x50x128xf16>, %k: memref<2x4x130x128xf16>, %v: memref<2x4x130x128xf16>, %o: memref<2x4x50x128xf16>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %v : memref<2x4x50x128xf16>, memref<2x4x130x128xf16>, memref<2x4x130x128xf16>) outs(%o : memref<2x4x50x128xf16>) scale = 8.838835e-02 seq_major = [false, false, false, false]
  return
}

// -----

// The quantization of the output for an int8 product (BERT's int8 build:
// kiln-fuse-kernels puts it in the attention's kernel): an elementwise op
// that reads the output through a reshape of the whole buffer and a scalar
// scale, into a uint8 buffer of as many elements. The attention applies it
// as it stores (two bytes a row pair, staged, then 16 bytes a lane into
// the uint8 buffer viewed in the output's shape): one launch, no half
// buffer.
// IR-LABEL: func.func private @quantized_output
// IR-NOT: kiln.buffer
// IR: %[[Y:.*]] = memref.reinterpret_cast %arg{{[0-9]+}} to offset: [0], sizes: [2, 16, 2, 32], strides: [1024, 64, 32, 1] : memref<2x16x64xi8> to memref<2x16x2x32xi8>
// IR: gpu.launch
// IR: nvvm.mma.sync
// IR: math.roundeven
// IR: vector.store %{{.*}} {alignment = 2 : i64} : memref<64x32xi8, #gpu.address_space<workgroup>>, vector<2xi8>
// IR: gpu.barrier
// IR: vector.store %{{.*}}, %[[Y]][{{.*}}] {alignment = 16 : i64} : memref<2x16x2x32xi8>, vector<16xi8>
// IR-NOT: gpu.launch
// IR-NOT: kiln.release
// IR: return
// The body takes the f32 value O / sum (no rounding to half and back) and
// its division by the scale as O times the row's 1 / sum divided by the
// scale: two divisions a thread (its two rows), none an element.
// PTX-LABEL: .visible .entry quantized_output_kernel(
// PTX: .maxntid 128, 1, 1
// PTX-NEXT: .minnctapersm 4
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-COUNT-2: div.rn.f32
// PTX-NOT: div.rn.f32
// PTX-NOT: cvt.rn.f16.f32
// PTX: st.shared.v2.b8
// PTX: st.global.v4.b32
// PTX-NOT: div.rn.f32
// PTX-NOT: cvt.rn.f16.f32
// PTX: ret;
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s3 = affine_map<(d0, d1, d2) -> ()>
func.func private @quantized_output(%qkv: memref<2x16x192xf16>, %scale: memref<f32>, %y: memref<2x16x64xi8>) attributes {kiln.kernel} {
  %shape = arith.constant dense<[2, 16, 64]> : tensor<3xindex>
  %shape_m = bufferization.to_buffer %shape : tensor<3xindex> to memref<3xindex>
  %q = memref.subview %qkv[0, 0, 0] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1]>>
  %k = memref.subview %qkv[0, 0, 64] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>>
  %v = memref.subview %qkv[0, 0, 128] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>>
  %q4 = memref.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1]>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>
  %k4 = memref.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>
  %v4 = memref.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>
  %o = memref.alloc() {alignment = 64 : i64} : memref<2x16x2x32xf16>
  kiln.attention ins(%q4, %k4, %v4 : memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>) outs(%o : memref<2x16x2x32xf16>) scale = 1.767767e-01 seq_major = [true, true, true, true]
  %o3 = memref.reshape %o(%shape_m) : (memref<2x16x2x32xf16>, memref<3xindex>) -> memref<2x16x64xf16>
  linalg.generic {indexing_maps = [#id3, #s3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o3, %scale : memref<2x16x64xf16>, memref<f32>) outs(%y : memref<2x16x64xi8>) {
  ^bb0(%in: f16, %s: f32, %out: i8):
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 255.0 : f32
    %x = arith.extf %in : f16 to f32
    %d = arith.divf %x, %s : f32
    %r = math.roundeven %d : f32
    %c = arith.maximumf %r, %lo : f32
    %c2 = arith.minimumf %c, %hi : f32
    %i = arith.fptoui %c2 : f32 to i8
    linalg.yield %i : i8
  }
  memref.dealloc %o : memref<2x16x2x32xf16>
  return
}

// -----

// The same with kiln-half-division's corrected division by a constant
// (x * 16 and its correction): the kernel multiplies each row's 1 / sum by
// 16 and each element once; no division, no product by 16 an element.
// PTX-LABEL: .visible .entry quantized_output_constant_scale_kernel(
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX-COUNT-2: mul.rn.f32 {{.*}}, 0f41800000;
// PTX-NOT: 0f41800000
// PTX-NOT: div.rn.f32
// PTX-NOT: cvt.rn.f16.f32
// PTX: st.shared.v2.b8
// PTX: st.global.v4.b32
// PTX-NOT: 0f41800000
// PTX-NOT: div.rn.f32
// PTX: ret;
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func private @quantized_output_constant_scale(%qkv: memref<2x16x192xf16>, %y: memref<2x16x64xi8>) attributes {kiln.kernel} {
  %shape = arith.constant dense<[2, 16, 64]> : tensor<3xindex>
  %shape_m = bufferization.to_buffer %shape : tensor<3xindex> to memref<3xindex>
  %q = memref.subview %qkv[0, 0, 0] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1]>>
  %k = memref.subview %qkv[0, 0, 64] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>>
  %v = memref.subview %qkv[0, 0, 128] [2, 16, 64] [1, 1, 1] : memref<2x16x192xf16> to memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>>
  %q4 = memref.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1]>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>
  %k4 = memref.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 64>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>
  %v4 = memref.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xf16, strided<[3072, 192, 1], offset: 128>> into memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>
  %o = memref.alloc() {alignment = 64 : i64} : memref<2x16x2x32xf16>
  kiln.attention ins(%q4, %k4, %v4 : memref<2x16x2x32xf16, strided<[3072, 192, 32, 1]>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 64>>, memref<2x16x2x32xf16, strided<[3072, 192, 32, 1], offset: 128>>) outs(%o : memref<2x16x2x32xf16>) scale = 1.767767e-01 seq_major = [true, true, true, true]
  %o3 = memref.reshape %o(%shape_m) : (memref<2x16x2x32xf16>, memref<3xindex>) -> memref<2x16x64xf16>
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o3 : memref<2x16x64xf16>) outs(%y : memref<2x16x64xi8>) {
  ^bb0(%in: f16, %out: i8):
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 255.0 : f32
    %s = arith.constant 0.0625 : f32
    %r = arith.constant 16.0 : f32
    %inf = arith.constant 0x7F800000 : f32
    %x = arith.extf %in : f16 to f32
    %q0 = arith.mulf %x, %r : f32
    %nq = arith.negf %q0 : f32
    %e = math.fma %nq, %s, %x : f32
    %q1 = math.fma %e, %r, %q0 : f32
    %a = math.absf %q0 : f32
    %big = arith.cmpf oeq, %a, %inf : f32
    %d = arith.select %big, %q0, %q1 : f32
    %rd = math.roundeven %d : f32
    %c = arith.maximumf %rd, %lo : f32
    %c2 = arith.minimumf %c, %hi : f32
    %i = arith.fptoui %c2 : f32 to i8
    linalg.yield %i : i8
  }
  memref.dealloc %o : memref<2x16x2x32xf16>
  return
}

// -----

// 8-bit Q, K and V (an int8 build's quantized QKV projection, uint8 Q with
// zero point 128, int8 K with 3, int8 V with 0): K and V tiles go by
// 16-byte asynchronous copies (16 elements) into two 8-bit buffers; once a
// tile is in, each thread widens its chunks to q - zp in f16 (exact) into
// the one f16 buffer the fragment loads read, and a barrier follows. Q's
// registers are 2-byte loads, widened the same way. The scales fold into
// the scores' scale (0.1767767 x log2(e) x 0.5 x 0.25) and V's into the
// rows' final 1 / sum (2 / sum).
// IR-LABEL: func.func private @packed_qkv_int8
// IR: gpu.launch {{.*}} workgroup(%[[KS:.*]] : memref<64x40xf16, #gpu.address_space<workgroup>>, %[[VS:.*]] : memref<64x40xf16, #gpu.address_space<workgroup>>, %[[KS8:.*]] : memref<128x48xi8, #gpu.address_space<workgroup>>, %[[VS8:.*]] : memref<128x48xi8, #gpu.address_space<workgroup>>
// IR: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// IR: vector.load %{{.*}} {alignment = 2 : i64} : memref<2x16x2x32xi8, {{.*}}>, vector<2xi8>
// IR: arith.extui %{{.*}} : vector<2xi8> to vector<2xi16>
// IR: arith.subi
// IR: arith.sitofp %{{.*}} : vector<2xi16> to vector<2xf16>
// IR: scf.for
// IR: nvvm.cp.async.wait.group 1
// IR-NEXT: gpu.barrier
// IR: vector.load %[[KS8]][{{.*}}] {alignment = 16 : i64} : memref<128x48xi8, #gpu.address_space<workgroup>>, vector<16xi8>
// IR: arith.extsi %{{.*}} : vector<16xi8> to vector<16xi16>
// IR: arith.subi
// IR: arith.sitofp %{{.*}} : vector<16xi16> to vector<16xf16>
// IR: vector.store %{{.*}}, %[[KS]][{{.*}}] {alignment = 16 : i64} : memref<64x40xf16, #gpu.address_space<workgroup>>, vector<16xf16>
// IR: vector.load %[[VS8]]
// IR: arith.extsi %{{.*}} : vector<16xi8> to vector<16xi16>
// IR-NEXT: arith.sitofp %{{.*}} : vector<16xi16> to vector<16xf16>
// IR-NEXT: vector.store %{{.*}}, %[[VS]]
// IR-NEXT: gpu.barrier
// IR: nvvm.mma.sync
// IR: arith.constant 0.0318{{[0-9]*}} : f32
// IR: arith.constant 2.000000e+00 : f32
// PTX-LABEL: .visible .entry packed_qkv_int8_kernel(
// PTX: cp.async.cg.shared.global
// PTX: cvt.rn.f16.s16
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ret;
func.func private @packed_qkv_int8(%qkv: memref<2x16x192xi8>, %o: memref<2x16x2x32xf16>) attributes {kiln.kernel} {
  %q = memref.subview %qkv[0, 0, 0] [2, 16, 64] [1, 1, 1] : memref<2x16x192xi8> to memref<2x16x64xi8, strided<[3072, 192, 1]>>
  %k = memref.subview %qkv[0, 0, 64] [2, 16, 64] [1, 1, 1] : memref<2x16x192xi8> to memref<2x16x64xi8, strided<[3072, 192, 1], offset: 64>>
  %v = memref.subview %qkv[0, 0, 128] [2, 16, 64] [1, 1, 1] : memref<2x16x192xi8> to memref<2x16x64xi8, strided<[3072, 192, 1], offset: 128>>
  %q4 = memref.expand_shape %q [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xi8, strided<[3072, 192, 1]>> into memref<2x16x2x32xi8, strided<[3072, 192, 32, 1]>>
  %k4 = memref.expand_shape %k [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xi8, strided<[3072, 192, 1], offset: 64>> into memref<2x16x2x32xi8, strided<[3072, 192, 32, 1], offset: 64>>
  %v4 = memref.expand_shape %v [[0], [1], [2, 3]] output_shape [2, 16, 2, 32] : memref<2x16x64xi8, strided<[3072, 192, 1], offset: 128>> into memref<2x16x2x32xi8, strided<[3072, 192, 32, 1], offset: 128>>
  kiln.attention ins(%q4, %k4, %v4 : memref<2x16x2x32xi8, strided<[3072, 192, 32, 1]>>, memref<2x16x2x32xi8, strided<[3072, 192, 32, 1], offset: 64>>, memref<2x16x2x32xi8, strided<[3072, 192, 32, 1], offset: 128>>) outs(%o : memref<2x16x2x32xf16>) scale = 1.767767e-01 seq_major = [true, true, true, true] dequant(scales = [0.5, 0.25, 2.0], zero_points = [128, 3, 0], unsigned = [true, false, false])
  return
}

// -----

// 8-bit heads of 16: a tile's 16-byte runs would not spread evenly over
// the 128 threads (64 x 16 / 16 = 64), so K and V go by 8-byte loads into
// registers, widened as they are stored (register staging, no cp.async).
// IR-LABEL: func.func private @int8_head16
// IR: gpu.launch
// IR-NOT: nvvm.cp.async
// IR: vector.load %{{.*}} {alignment = 8 : i64} : memref<1x2x64x16xi8>, vector<8xi8>
// IR: scf.for
// IR: arith.extsi %{{.*}} : vector<8xi8> to vector<8xi16>
// IR: arith.sitofp %{{.*}} : vector<8xi16> to vector<8xf16>
// IR: vector.store %{{.*}} {alignment = 16 : i64} : memref<64x24xf16, #gpu.address_space<workgroup>>, vector<8xf16>
// IR: nvvm.mma.sync
// PTX-LABEL: .visible .entry int8_head16_kernel(
// PTX-NOT: cp.async
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ret;
func.func private @int8_head16(%q: memref<1x2x64x16xi8>, %k: memref<1x2x64x16xi8>, %v: memref<1x2x64x16xi8>, %o: memref<1x2x64x16xf16>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %v : memref<1x2x64x16xi8>, memref<1x2x64x16xi8>, memref<1x2x64x16xi8>) outs(%o : memref<1x2x64x16xf16>) scale = 2.500000e-01 seq_major = [false, false, false, false] dequant(scales = [0.1, 0.1, 0.1], zero_points = [0, 0, 0], unsigned = [false, false, false])
  return
}
