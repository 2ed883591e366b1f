#!/usr/bin/env python3
"""Writes the MLIR (LLVM + NVVM dialects) of a Hopper GEMM kernel: C = A * B^T.

A prototype of the warpgroup-MMA strategy that issue 12 puts into Kiln's
NVPTX target, kept as a generator so that tile shapes and pipeline depths can
be compiled here and measured together on the H200 (bench/hopper/run.py).

The kernel: A is M x K and B is N x K (both K contiguous, fp16 or bf16), C is
M x N (row-major, fp16/bf16 or f32), accumulation in f32. One block computes a
BM x BN tile of C with 1 + BM/64 warpgroups: warpgroup 0 is the producer (one
thread issues the TMA loads of A and B into a ring of STAGES shared-memory
stages, each completing on its `full` mbarrier); warpgroup 1 + c consumes
rows 64c..64c+63 of the tile with wgmma.mma_async m64nBNk16 reading both
operands from shared memory (128-byte swizzle, as TMA writes it), and frees a
stage through its `empty` mbarrier once its wgmmas have read it. The
descriptors (CUtensorMap, 128 bytes each) live in device memory; the runtime
encodes them with cuTensorMapEncodeTiled.
"""
import argparse


def gen(bm=128, bn=128, bk=64, stages=4, dtype="f16", out="f16", name=None,
        wait_depth=0, raster=0, b_major="k", swap_bo=False):
    """b_major "k": B is N x K (K contiguous); "mn": B is K x N (N contiguous,
    as ONNX MatMul's B), loaded as BN/64 boxes of 64 (N) x 64 (K)."""
    assert bm % 64 == 0 and bk == 64 and bn % 8 == 0 and bn <= 256
    consumers = bm // 64
    threads = 128 * (1 + consumers)
    esz = 2
    a_bytes = bm * bk * esz
    b_bytes = bn * bk * esz
    stage_bytes = a_bytes + b_bytes
    bar_off = stages * stage_bytes
    smem = bar_off + 16 * stages
    nacc = bn // 2  # f32 accumulators per thread for m64nBN
    acc_t = "!llvm.struct<(" + ", ".join(["f32"] * nacc) + ")>"
    wty = {"f16": "f16", "bf16": "bf16"}[dtype]
    name = name or (f"gemm_{bm}x{bn}x{bk}_s{stages}_w{wait_depth}_{dtype}_{out}"
                    + ("" if b_major == "k" else "_bmn" + ("x" if swap_bo else "")))
    L = []
    e = L.append
    e("module attributes {gpu.container_module} {")
    e(f"llvm.mlir.global external @smem() {{addr_space = 3 : i32, alignment = 1024 : i64}} : !llvm.array<0 x i8>")
    e(f"llvm.func @{name}(%descA: !llvm.ptr, %descB: !llvm.ptr, %C: !llvm.ptr, %M: i32, %N: i32, %K: i32)"
      f" attributes {{nvvm.kernel, nvvm.maxntid = array<i32: {threads}, 1, 1>}} {{")
    c = {}
    consts = []  # placed at the entry block (they must dominate every use)
    entry_at = len(L)

    def const(v, t="i32"):
        key = (v, t)
        if key not in c:
            nm = f"%c{v}_{t}".replace("-", "m")
            consts.append(f"  {nm} = llvm.mlir.constant({v} : {t}) : {t}")
            c[key] = nm
        return c[key]

    for v in [0, 1, 2, 4, 8, 16, 32, 64, 128, bm, bn, bk, stages, stage_bytes, a_bytes, bar_off, 10000000]:
        const(v)
    e("  %smem = llvm.mlir.addressof @smem : !llvm.ptr<3>")
    e("  %tid = nvvm.read.ptx.sreg.tid.x : i32")
    e("  %bx = nvvm.read.ptx.sreg.ctaid.x : i32")
    e("  %by = nvvm.read.ptx.sreg.ctaid.y : i32")
    e(f"  %n0 = llvm.mul %bx, {const(bn)} : i32")
    e(f"  %m0 = llvm.mul %by, {const(bm)} : i32")
    e(f"  %wg = llvm.udiv %tid, {const(128)} : i32")
    # K tiles
    e(f"  %kp = llvm.add %K, {const(bk - 1)} : i32")
    e(f"  %KT = llvm.udiv %kp, {const(bk)} : i32")
    e(f"  %smem_i = llvm.ptrtoint %smem : !llvm.ptr<3> to i32")

    # init barriers
    e(f"  %is0 = llvm.icmp \"eq\" %tid, {const(0)} : i32")
    e("  llvm.cond_br %is0, ^init, ^after_init")
    e("^init:")
    for s in range(stages):
        e(f"  %fb{s} = llvm.getelementptr %smem[{bar_off + 8 * s}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8")
        e(f"  nvvm.mbarrier.init %fb{s}, {const(1)} : !llvm.ptr<3>, i32")
        e(f"  %eb{s} = llvm.getelementptr %smem[{bar_off + 8 * (stages + s)}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8")
        e(f"  nvvm.mbarrier.init %eb{s}, {const(128 * consumers)} : !llvm.ptr<3>, i32")
    e("  nvvm.fence.mbarrier.init")
    e("  llvm.br ^after_init")
    e("^after_init:")
    e("  nvvm.barrier0")
    e(f"  %isprod = llvm.icmp \"eq\" %wg, {const(0)} : i32")
    e("  llvm.cond_br %isprod, ^producer, ^consumer")

    # ---------------- producer ----------------
    e("^producer:")
    e("  llvm.cond_br %is0, ^ploop(%c0_i32 : i32), ^exit")
    e("^ploop(%kt: i32):")
    e("  %pdone = llvm.icmp \"uge\" %kt, %KT : i32")
    e("  llvm.cond_br %pdone, ^exit, ^pbody")
    e("^pbody:")
    e(f"  %ps = llvm.urem %kt, {const(stages)} : i32")
    e(f"  %pn = llvm.udiv %kt, {const(stages)} : i32")
    e(f"  %poff = llvm.mul %ps, {const(8)} : i32")
    e(f"  %pfull_o = llvm.add %poff, {const(bar_off)} : i32")
    e(f"  %pempty_o = llvm.add %pfull_o, {const(8 * stages)} : i32")
    e("  %pfull = llvm.getelementptr %smem[%pfull_o] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e("  %pempty = llvm.getelementptr %smem[%pempty_o] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e(f"  %pneedwait = llvm.icmp \"uge\" %kt, {const(stages)} : i32")
    e("  llvm.cond_br %pneedwait, ^pwait, ^pissue")
    e("^pwait:")
    e(f"  %pnm1 = llvm.add %pn, {const(1)} : i32")
    e(f"  %pphase = llvm.and %pnm1, {const(1)} : i32")
    e(f"  nvvm.mbarrier.try_wait.parity %pempty, %pphase, {const(10000000)} : !llvm.ptr<3>, i32, i32")
    e("  llvm.br ^pissue")
    e("^pissue:")
    e(f"  nvvm.mbarrier.arrive.expect_tx %pfull, {const(stage_bytes)} : !llvm.ptr<3>, i32")
    e(f"  %pst = llvm.mul %ps, {const(stage_bytes)} : i32")
    e("  %pA = llvm.getelementptr %smem[%pst] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e(f"  %pstb = llvm.add %pst, {const(a_bytes)} : i32")
    e("  %pB = llvm.getelementptr %smem[%pstb] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e(f"  %pk = llvm.mul %kt, {const(bk)} : i32")
    e("  %pAc = llvm.addrspacecast %pA : !llvm.ptr<3> to !llvm.ptr<7>")
    e("  nvvm.cp.async.bulk.tensor.shared.cluster.global %pAc, %descA, %pfull, box[%pk, %m0] : !llvm.ptr<7>, !llvm.ptr")
    if b_major == "k":
        e("  %pBc = llvm.addrspacecast %pB : !llvm.ptr<3> to !llvm.ptr<7>")
        e("  nvvm.cp.async.bulk.tensor.shared.cluster.global %pBc, %descB, %pfull, box[%pk, %n0] : !llvm.ptr<7>, !llvm.ptr")
    else:  # BN/64 boxes of [64 n][64 k], one after the other
        for j in range(bn // 64):
            e(f"  %pB{j} = llvm.getelementptr %pB[{j * 64 * bk * esz}] : (!llvm.ptr<3>) -> !llvm.ptr<3>, i8")
            e(f"  %pBc{j} = llvm.addrspacecast %pB{j} : !llvm.ptr<3> to !llvm.ptr<7>")
            e(f"  %pn{j} = llvm.add %n0, {const(64 * j)} : i32")
            e(f"  nvvm.cp.async.bulk.tensor.shared.cluster.global %pBc{j}, %descB, %pfull, box[%pn{j}, %pk] : !llvm.ptr<7>, !llvm.ptr")
    e(f"  %ktn = llvm.add %kt, {const(1)} : i32")
    e("  llvm.br ^ploop(%ktn : i32)")

    # ---------------- consumers ----------------
    e("^consumer:")
    e(f"  %cw = llvm.sub %wg, {const(1)} : i32")
    e(f"  %ltid = llvm.urem %tid, {const(128)} : i32")
    e(f"  %zero = llvm.mlir.constant(0.0 : f32) : f32")
    e(f"  %acc0 = llvm.mlir.undef : {acc_t}")
    prev = "%acc0"
    for i in range(nacc):
        e(f"  %accz{i} = llvm.insertvalue %zero, {prev}[{i}] : {acc_t}")
        prev = f"%accz{i}"
    # descriptor constant high bits: LBO=1 (16B), SBO=1024>>4=64, swizzle 128B (1<<62)
    hi = (1 << 16) | (64 << 32) | (1 << 62)
    e(f"  %dhi = llvm.mlir.constant({hi} : i64) : i64")
    # MN-major B: atoms of 64 (N) x 8 (K) elements, 1024 bytes; along K
    # 1024 apart, along N 64 * BK * 2 bytes apart (one box).
    lbo, sbo = (64 * bk * esz, 1024) if not swap_bo else (1024, 64 * bk * esz)
    hib = ((lbo >> 4) << 16) | ((sbo >> 4) << 32) | (1 << 62)
    e(f"  %dhib = llvm.mlir.constant({hib if b_major == 'mn' else hi} : i64) : i64")
    e(f"  %cA_off = llvm.mul %cw, {const(64 * 128)} : i32")
    e(f"  llvm.br ^cloop(%c0_i32, {prev} : i32, {acc_t})")
    e(f"^cloop(%ck: i32, %acc: {acc_t}):")
    e("  %cdone = llvm.icmp \"uge\" %ck, %KT : i32")
    e("  llvm.cond_br %cdone, ^epilogue, ^cbody")
    e("^cbody:")
    e(f"  %cs = llvm.urem %ck, {const(stages)} : i32")
    e(f"  %cn = llvm.udiv %ck, {const(stages)} : i32")
    e(f"  %cphase = llvm.and %cn, {const(1)} : i32")
    e(f"  %coff = llvm.mul %cs, {const(8)} : i32")
    e(f"  %cfull_o = llvm.add %coff, {const(bar_off)} : i32")
    e(f"  %cempty_o = llvm.add %cfull_o, {const(8 * stages)} : i32")
    e("  %cfull = llvm.getelementptr %smem[%cfull_o] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e("  %cempty = llvm.getelementptr %smem[%cempty_o] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8")
    e(f"  nvvm.mbarrier.try_wait.parity %cfull, %cphase, {const(10000000)} : !llvm.ptr<3>, i32, i32")
    e(f"  %cst = llvm.mul %cs, {const(stage_bytes)} : i32")
    e("  %cAaddr0 = llvm.add %smem_i, %cst : i32")
    e("  %cAaddr = llvm.add %cAaddr0, %cA_off : i32")
    e(f"  %cBaddr = llvm.add %cAaddr0, {const(a_bytes)} : i32")
    e("  nvvm.wgmma.fence.aligned")
    cur = "%acc"
    for kk in range(bk // 16):
        for opnd, base in (("a", "%cAaddr"), ("b", "%cBaddr")):
            step = 32 * kk if (opnd == "a" or b_major == "k") else 16 * 128 * kk
            dh = "%dhi" if opnd == "a" else "%dhib"
            e(f"  %{opnd}addr{kk} = llvm.add {base}, {const(step)} : i32")
            e(f"  %{opnd}sh{kk} = llvm.lshr %{opnd}addr{kk}, {const(4)} : i32")
            e(f"  %{opnd}m{kk} = llvm.and %{opnd}sh{kk}, {const(0x3FFF)} : i32")
            e(f"  %{opnd}z{kk} = llvm.zext %{opnd}m{kk} : i32 to i64")
            e(f"  %{opnd}desc{kk} = llvm.or %{opnd}z{kk}, {dh} : i64")
        e(f"  %w{kk} = nvvm.wgmma.mma_async %adesc{kk}, %bdesc{kk}, {cur}, #nvvm.shape<m = 64, n = {bn}, k = 16>, "
          f"D[<f32>, <one>, <wrapped>], A[<{wty}>, <one>, <row>], B[<{wty}>, <one>, <{'col' if b_major == 'k' else 'row'}>] : {acc_t} -> {acc_t}")
        cur = f"%w{kk}"
    e("  nvvm.wgmma.commit.group.sync.aligned")
    e("  nvvm.wgmma.wait.group.sync.aligned 0")
    e("  %arr = nvvm.mbarrier.arrive %cempty : !llvm.ptr<3> -> i64")
    e(f"  %ckn = llvm.add %ck, {const(1)} : i32")
    e(f"  llvm.br ^cloop(%ckn, {cur} : i32, {acc_t})")

    # ---------------- epilogue ----------------
    e("^epilogue:")
    e(f"  %warp = llvm.udiv %ltid, {const(32)} : i32")
    e(f"  %lane = llvm.urem %ltid, {const(32)} : i32")
    e(f"  %lr = llvm.udiv %lane, {const(4)} : i32")
    e(f"  %lc4 = llvm.urem %lane, {const(4)} : i32")
    e(f"  %lc = llvm.mul %lc4, {const(2)} : i32")
    e(f"  %wr = llvm.mul %warp, {const(16)} : i32")
    e(f"  %cwr = llvm.mul %cw, {const(64)} : i32")
    e("  %r0a = llvm.add %m0, %cwr : i32")
    e("  %r0b = llvm.add %r0a, %wr : i32")
    e("  %row0 = llvm.add %r0b, %lr : i32")
    e(f"  %row1 = llvm.add %row0, {const(8)} : i32")
    e("  %col0 = llvm.add %n0, %lc : i32")
    ot = {"f16": "f16", "bf16": "bf16", "f32": "f32"}[out]
    osz = 4 if out == "f32" else 2
    for h in range(2):
        e(f"  %rok{h} = llvm.icmp \"ult\" %row{h}, %M : i32")
        e(f"  %rowz{h} = llvm.zext %row{h} : i32 to i64")
        e(f"  %Nz = llvm.zext %N : i32 to i64") if h == 0 else None
        e(f"  %rowoff{h} = llvm.mul %rowz{h}, %Nz : i64")
    blk = 0
    for j in range(bn // 8):
        for h in range(2):
            i0 = j * 4 + h * 2
            e(f"  %col_{j}_{h} = llvm.add %col0, {const(8 * j)} : i32")
            e(f"  %cok_{j}_{h} = llvm.icmp \"ult\" %col_{j}_{h}, %N : i32")
            e(f"  %ok_{j}_{h} = llvm.and %rok{h}, %cok_{j}_{h} : i1")
            e(f"  llvm.cond_br %ok_{j}_{h}, ^st_{j}_{h}, ^nx_{j}_{h}")
            e(f"^st_{j}_{h}:")
            e(f"  %v0_{j}_{h} = llvm.extractvalue {cur if False else '%acc'}[{i0}] : {acc_t}")
            e(f"  %v1_{j}_{h} = llvm.extractvalue %acc[{i0 + 1}] : {acc_t}")
            e(f"  %colz_{j}_{h} = llvm.zext %col_{j}_{h} : i32 to i64")
            e(f"  %idx_{j}_{h} = llvm.add %rowoff{h}, %colz_{j}_{h} : i64")
            e(f"  %p_{j}_{h} = llvm.getelementptr %C[%idx_{j}_{h}] : (!llvm.ptr, i64) -> !llvm.ptr, {ot}")
            if out == "f32":
                e(f"  %u_{j}_{h} = llvm.mlir.undef : vector<2xf32>")
                e(f"  %u1_{j}_{h} = llvm.insertelement %v0_{j}_{h}, %u_{j}_{h}[%c0_i32 : i32] : vector<2xf32>")
                e(f"  %u2_{j}_{h} = llvm.insertelement %v1_{j}_{h}, %u1_{j}_{h}[%c1_i32 : i32] : vector<2xf32>")
                e(f"  llvm.store %u2_{j}_{h}, %p_{j}_{h} {{alignment = 8 : i64}} : vector<2xf32>, !llvm.ptr")
            else:
                e(f"  %t0_{j}_{h} = llvm.fptrunc %v0_{j}_{h} : f32 to {ot}")
                e(f"  %t1_{j}_{h} = llvm.fptrunc %v1_{j}_{h} : f32 to {ot}")
                e(f"  %u_{j}_{h} = llvm.mlir.undef : vector<2x{ot}>")
                e(f"  %u1_{j}_{h} = llvm.insertelement %t0_{j}_{h}, %u_{j}_{h}[%c0_i32 : i32] : vector<2x{ot}>")
                e(f"  %u2_{j}_{h} = llvm.insertelement %t1_{j}_{h}, %u1_{j}_{h}[%c1_i32 : i32] : vector<2x{ot}>")
                e(f"  llvm.store %u2_{j}_{h}, %p_{j}_{h} {{alignment = 4 : i64}} : vector<2x{ot}>, !llvm.ptr")
            e(f"  llvm.br ^nx_{j}_{h}")
            e(f"^nx_{j}_{h}:")
    e("  llvm.br ^exit")
    e("^exit:")
    e("  llvm.return")
    e("}")
    e("}")
    L[entry_at:entry_at] = consts
    meta = dict(name=name, bm=bm, bn=bn, bk=bk, stages=stages, threads=threads, smem=smem,
                dtype=dtype, out=out, b_major=b_major)
    return "\n".join(L) + "\n", meta


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bm", type=int, default=128)
    ap.add_argument("--bn", type=int, default=128)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--dtype", default="f16")
    ap.add_argument("--out", default="f16")
    ap.add_argument("-o", default="-")
    a = ap.parse_args()
    text, meta = gen(a.bm, a.bn, 64, a.stages, a.dtype, a.out)
    if a.o == "-":
        print(text)
    else:
        open(a.o, "w").write(text)
