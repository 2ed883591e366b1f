// The fused attention kernel with the block --gpu-attention-block chooses
// (kiln-map-kernels-to-gpu's attention-block, lib/Target/GPU/FlashAttention.cpp):
// 8 warps of 16 query rows (128 rows, 256 threads a block, one block a
// (batch, head) at S = 128), K and V tiles of 32 keys (two buffers of 32
// rows each), and 3 blocks a multiprocessor asked of the vendor compiler
// (PTX .minnctapersm 3) although the output has no epilogue. The default
// block (flash-attention.mlir) is 4 warps of 64 keys with no bound here.
// A value that is not a block is an error of the pass and of the stage
// pipelines; so is a block whose K and V tiles do not divide among its
// threads in 16-byte runs.
// RUN: kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' attention-block=8x32/3" | FileCheck %s --check-prefix=IR
// RUN: kiln-opt %s --pass-pipeline="builtin.module(kiln-map-kernels-to-gpu{device='cuda sm_80' attention-block=8x32/3}, canonicalize, gpu-launch-sink-index-computations, kiln-outline-gpu-kernels, kiln-merge-gpu-modules, nvvm-attach-target{chip=sm_80 features=+ptx80 O=3}, gpu.module(lower-affine, arith-expand, expand-strided-metadata, convert-scf-to-cf, kiln-finalize-device-memrefs{stage=before}, convert-gpu-to-nvvm, kiln-finalize-device-memrefs, canonicalize, cse, reconcile-unrealized-casts), gpu-module-to-binary{format=isa})" | sed -e 's/\\0A/\n/g' -e 's/\\09/ /g' | FileCheck %s --check-prefix=PTX
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' attention-block=6x64" 2>&1 | FileCheck %s --check-prefix=NOBLOCK
// RUN: not kiln-opt %s --kiln-map-kernels-to-gpu="device='cuda sm_80' attention-block=16x16" 2>&1 | FileCheck %s --check-prefix=MISFIT
// The stage pipelines (kilnc's stages in kiln-opt) check the value too.
// RUN: not kiln-opt %s --pass-pipeline="builtin.module(kiln-kernels-pipeline{target=cuda:sm_80 gpu-attention-block=6x64})" 2>&1 | FileCheck %s --check-prefix=NOBLOCK

// IR-LABEL: func.func private @bhsd
// IR: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c256, {{.*}}) workgroup(%[[KS:.*]] : memref<64x72xf16, #gpu.address_space<workgroup>>, %[[VS:.*]] : memref<64x72xf16, #gpu.address_space<workgroup>>, %[[OS:.*]] : memref<128x64xf16, #gpu.address_space<workgroup>>)
// A tile of 32 keys: 2 copies of K and 2 of V a thread.
// IR-COUNT-4: nvvm.cp.async.shared.global {{.*}}, 16, cache = cg
// IR: nvvm.cp.async.commit.group
// IR: scf.for
// S = Q·Kᵀ on a tile: 4 x 4 products (32 keys, head 64), P·V 2 x 8.
// IR-COUNT-16: nvvm.mma.sync
// IR: math.exp2
// IR-COUNT-16: nvvm.mma.sync

// PTX-LABEL: .visible .entry bhsd_kernel(
// PTX: .minnctapersm 3
// PTX-DAG: .shared .align 16 .b8 __wg_bhsd_kernel_0[9216]
// PTX-DAG: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// PTX: ret;

// NOBLOCK: error: gpu-attention-block: '6x64' is not a block of the fused attention
// MISFIT: error: fused attention: head sizes 64 and 64 do not fit the matrix instruction's tiles with --gpu-attention-block=16x16 (its keys a step times a head size must divide among the block's threads in runs of 8)

func.func private @bhsd(%q: memref<2x4x128x64xf16>, %k: memref<2x4x128x64xf16>, %v: memref<2x4x128x64xf16>, %o: memref<2x4x128x64xf16>) attributes {kiln.kernel} {
  kiln.attention ins(%q, %k, %v : memref<2x4x128x64xf16>, memref<2x4x128x64xf16>, memref<2x4x128x64xf16>) outs(%o : memref<2x4x128x64xf16>) scale = 1.250000e-01 seq_major = [false, false, false, false]
  return
}
