#!/usr/bin/env python3
"""Single-MatMul ONNX models compiled by kilnc, timed on the GPU against
torch.matmul in the same process (issue 12's GEMM measurement).

  here:  .venv/bin/python bench/hopper/kilnc_gemm.py prepare DIR [--chip sm_90a]
  there: python3 bench/hopper/kilnc_gemm.py run DIR [--json F]

Each model is Y = MatMul(A, B) with A [M, K] and B [K, N] graph inputs
(float16 or bfloat16), so the payload stays small; the runtime's C API runs
it on torch's stream on device tensors (kiln_instance_run_device, CUDA
graphs on). The result is checked against an fp32 product of the same
inputs before timing; the runtime's per-kernel times show what the MatMul
kernel itself takes.

Persistent rows (--persistent, default on): every fp16/bf16 shape is
built a second time with --gpu-persistent=on (the sm_90a kernel's blocks
loop over tiles), labelled "+persistent", so one run compares the two
kernels on the same inputs; "auto" says which rows --gpu-persistent=auto
would pick (more tiles than 132 SMs and at most 32 K steps).

TF32 rows (--tf32 shapes, --tf32-chips): float32 models compiled with
--precision=tf32, for sm_90a (wgmma m64nNk8 .tf32 from TMA; B, N-major here,
transposed to K-major by a launch first) and for sm_80 (mma.sync m16n8k8
.tf32; its PTX is compiled for the H200 when the model loads). They are
checked against a float64 product of the same inputs: relative L2 error and
max |Y - ref| / max |ref| at most 2^-9 (twice TF32's unit roundoff when the
operands are truncated, as wgmma does, 2^-10; on these inputs rounding gives
about 3e-4, truncation about 8e-4, simulated on the CPU), and
timed against torch.matmul with torch.backends.cuda.matmul.allow_tf32 = True
(torch's own TF32 error is listed next to Kiln's). One exact float32 row
(--fp32, no --precision) shows what the tensor cores replace.

Asynchronous-copy rows (--async-shapes, --async-chips, default sm_80): each
of those fp16 shapes (and bf16 where the shape is in --bf16) is built for
each chip twice, as it is and with --gpu-async-copy=1 (the mma.sync
kernels' operands through a cp.async ring read with ldmatrix), labelled
"<chip>" and "<chip> +async", so one run compares the two portable kernels
on the H200 (their PTX compiled for it at load).

Tile rows (--tiles, default 192x128): every fp16 shape built again with
--gpu-tiles=T for each T (the sm_90a kernel restricted to that output
tile), labelled "+tiles T", so one run measures a tile the cost model does
not take yet (WarpgroupMatch.cpp's table: a rate of 0 until measured) next
to its own choice; the summary gives each tile's speedup over the default
build per shape and its median.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from shapes import SHAPES  # noqa: E402


# A TF32 result's bound against the float64 product (see the docstring).
TF32_TOL = 2.0 ** -9
# An exact float32 build's.
FP32_TOL = 1e-5


def prepare(a):
    import onnx
    from onnx import TensorProto, helper

    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    man = []
    # (shape, dtype, precision flag, chip): fp16 everywhere, bf16 on a few,
    # TF32 on a few for each of --tf32-chips, exact fp32 on --fp32.
    rows = []
    for name in SHAPES:
        rows.append((name, "float16", None, a.chip))
        if name in a.bf16:
            rows.append((name, "bfloat16", None, a.chip))
    if a.persistent:
        rows += [(name, dt, "persistent", chip) for name, dt, _, chip in list(rows)]
    for t in a.tiles.split(",") if a.tiles else []:
        rows += [(name, "float16", "tiles:" + t, a.chip) for name in SHAPES]
    for name in a.tf32:
        for chip in a.tf32_chips.split(","):
            rows.append((name, "float32", "tf32", chip))
    for name in a.fp32:
        rows.append((name, "float32", None, a.chip))
    for name in a.async_shapes:
        for dt in ["float16"] + (["bfloat16"] if name in a.bf16 else []):
            for chip in a.async_chips.split(",") if a.async_chips else []:
                rows += [(name, dt, "plain", chip), (name, dt, "async", chip)]
    types = {"float16": TensorProto.FLOAT16, "bfloat16": TensorProto.BFLOAT16,
             "float32": TensorProto.FLOAT}
    for name, dt, precision, chip in rows:
        M, N, K = SHAPES[name]
        tp = types[dt]
        g = helper.make_graph(
            [helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")], "gemm",
            [helper.make_tensor_value_info("A", tp, [M, K]),
             helper.make_tensor_value_info("B", tp, [K, N])],
            [helper.make_tensor_value_info("Y", tp, [M, N])])
        model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        tag = f"{name.replace(' ', '_').replace('^', 'p')}_{dt}"
        tiles = precision[len("tiles:"):] if precision and precision.startswith("tiles:") else None
        if precision:
            # "tiles:128x128/2" -> "_tiles128x128per2" (a file name).
            tag += f"_{precision.replace(':', '').replace('/', 'per')}"
        if chip != a.chip or (precision and precision not in ("persistent", "plain")
                              and not tiles):
            tag += f"_{chip}"
        path = os.path.join(a.dir, tag + ".onnx")
        onnx.save(model, path)
        so = os.path.join(a.dir, tag + ".so")
        report = os.path.join(a.dir, tag + ".report.json")
        cmd = [kilnc, path, f"--target=cuda:{chip}", "-o", so, f"--report={report}"]
        if precision == "persistent":
            cmd.append("--gpu-persistent=on")
        elif precision == "async":
            cmd.append("--gpu-async-copy=1")
        elif precision == "plain":
            pass
        elif tiles:
            cmd.append(f"--gpu-tiles={tiles}")
        elif precision:
            cmd.append(f"--precision={precision}")
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True)
        ok = p.returncode == 0
        print(f"{tag}: {'ok' if ok else 'FAILED ' + p.stderr[:300]} ({time.time() - t0:.1f} s)",
              flush=True)
        # The models go at the end (later builds of a shape rewrite them).
        if tiles:
            precision = None
        persistent = precision == "persistent"
        # The pair of portable builds, without and with --gpu-async-copy.
        pair = precision in ("plain", "async")
        if pair:
            tag_precision = precision
            precision = None
        # The kernel's choices (tile, stages, split K, persistent grid).
        note = ""
        if ok and os.path.exists(report):
            import re
            notes = re.findall(r'"(\d+x\d+x\d+[^"]*tile [^"]*)"', open(report).read())
            note = notes[-1] if notes else ""
        man.append(dict(shape=name, M=M, N=N, K=K, dtype=dt,
                        precision=dt if persistent else precision or dt,
                        persistent=persistent, chip=chip, so=tag + ".so", ok=ok,
                        note=note))
        if pair:
            man[-1]["async"] = tag_precision == "async"
        if tiles:
            man[-1]["tiles"] = tiles
    for name in os.listdir(a.dir):
        if name.endswith(".onnx"):
            os.remove(os.path.join(a.dir, name))
    json.dump(man, open(os.path.join(a.dir, "manifest.json"), "w"), indent=1)
    # run loads the models through this build's runtime library.
    runtime = os.path.join(ROOT, "build", "lib", "libkiln_runtime.so")
    if os.path.exists(runtime):
        shutil.copy(runtime, os.path.join(a.dir, "libkiln_runtime.so"))
    else:
        print(f"no {runtime}: copy the runtime library into {a.dir} before run")
    bad = [m["so"] for m in man if not m["ok"]]
    if bad:
        sys.exit(f"{len(bad)} of {len(man)} models failed to compile: {', '.join(bad)}")


def errors(out, ref):
    """max |out - ref| / max |ref| and the relative L2 error (inf when out
    is not finite)."""
    import torch

    if not torch.isfinite(out).all().item():
        return float("inf"), float("inf")
    d = out.to(ref.dtype) - ref
    return (d.abs().max() / ref.abs().max()).item(), (d.norm() / ref.norm()).item()


def kiln_tile(m):
    """The tile (BM, BN) kilnc's report named ("tile 128x128x64"), else
    128 x 128."""
    import re

    t = re.search(r"tile (\d+)x(\d+)x", m.get("note", ""))
    return (int(t.group(1)), int(t.group(2))) if t else (128, 128)


def run(a):
    import torch
    from kiln_tools.runtime import KilnModel, profile_runs, time_cuda, time_cuda_pipelined

    lib = os.path.join(a.dir, "libkiln_runtime.so")
    man = json.load(open(os.path.join(a.dir, "manifest.json")))
    torch.manual_seed(0)
    stream = torch.cuda.current_stream()
    rows = []

    for m in man:
        if not m["ok"]:
            continue
        M, N, K = m["M"], m["N"], m["K"]
        dt = getattr(torch, m["dtype"])
        precision = m.get("precision", m["dtype"])
        f32 = m["dtype"] == "float32"
        # TF32 rows: torch.matmul on TF32 tensor cores too; exact rows not.
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        A = (torch.randn(M, K, device="cuda") * 0.5).to(dt)
        B = (torch.randn(K, N, device="cuda") / K ** 0.5).to(dt)
        # float32 models against a float64 product (what TF32 and fp32 are
        # measured against), half ones against fp32.
        ref = A.double() @ B.double() if f32 else A.float() @ B.float()
        Y = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        row = dict(m)
        try:
            km = KilnModel(lib, os.path.join(a.dir, m["so"]))
            row["device"] = getattr(km, "device", m.get("chip"))
            km.set_stream(stream.cuda_stream)
            km.prepare([A, B], [Y])
            km.run()
            torch.cuda.synchronize()
            row["max_rel_err"], row["rel_l2"] = errors(Y, ref)
            if f32:
                row["torch_max_rel_err"], row["torch_rel_l2"] = errors(torch.matmul(A, B), ref)
                tol = TF32_TOL if precision == "tf32" else FP32_TOL
                row["tol"] = tol
                row["within_tol"] = row["max_rel_err"] <= tol and row["rel_l2"] <= tol
            row["kiln_ms"] = time_cuda(km.run, iters=50)
            row["kiln_pipelined_ms"] = time_cuda_pipelined(km.run, iters=50)
            km.release()
            # Without graphs: one plain launch per run.
            kn = KilnModel(lib, os.path.join(a.dir, m["so"]), graphs=0)
            kn.set_stream(stream.cuda_stream)
            kn.prepare([A, B], [Y])
            row["kiln_nograph_ms"] = time_cuda(kn.run, iters=50)
            kn.release()
            rep, _ = profile_runs(lib, os.path.join(a.dir, m["so"]), [A, B], [Y],
                                  stream.cuda_stream,
                                  os.path.join(a.dir, m["so"] + ".profile.jsonl"), runs=6)
            row["kernels"] = rep.get("kernels")
        except Exception as ex:  # noqa: BLE001 - recorded in the table
            row["error"] = str(ex)[:300]
        row["torch_ms"] = time_cuda(lambda: torch.matmul(A, B), iters=50)
        row["torch_pipelined_ms"] = time_cuda_pipelined(lambda: torch.matmul(A, B), iters=50)
        flops = 2.0 * M * N * K
        if "kiln_ms" in row:
            row["kiln_tflops"] = flops / row["kiln_ms"] / 1e9
            row["ratio"] = row["torch_ms"] / row["kiln_ms"]
            row["ratio_pipelined"] = row["torch_pipelined_ms"] / row["kiln_pipelined_ms"]
        row["torch_tflops"] = flops / row["torch_ms"] / 1e9
        rows.append(row)
        label = precision if precision == m["dtype"] else f"{m['dtype']} {precision}"
        if f32:
            label += f" {m.get('chip', '')}"
        if "async" in m:
            label += f" {m.get('chip', '')}" + (" +async" if m["async"] else "")
        if m.get("tiles"):
            label += f" +tiles {m['tiles']}"
        if m.get("persistent"):
            label += " +persistent"
            # What --gpu-persistent=auto picks (WarpgroupPersistent.cpp).
            bm, bn = kiln_tile(m)
            tiles = -(-M // bm) * -(-N // bn)
            if tiles > 132 and -(-K // 64) <= 32:
                label += " auto"
        check = ""
        if "within_tol" in row:
            check = (f" rel L2 {row['rel_l2']:.1e} (torch {row['torch_rel_l2']:.1e}) "
                     f"{'ok' if row['within_tol'] else 'OVER'} {row['tol']:.1e}")
        print(f"{m['shape']:20s} {label:20s} kiln {row.get('kiln_ms', float('nan')):8.3f} ms "
              f"{row.get('kiln_tflops', 0):5.0f} TF/s  torch {row['torch_ms']:8.3f} ms "
              f"{row['torch_tflops']:5.0f} TF/s  x{row.get('ratio', 0):.2f}  pipelined "
              f"x{row.get('ratio_pipelined', 0):.2f}  no graph {row.get('kiln_nograph_ms', 0):.3f} ms  "
              f"err {row.get('max_rel_err', float('nan')):.1e}{check} {row.get('error', '')}"
              f"  [{m.get('note', '')}]",
              flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    import statistics
    groups = [("float16", None, False), ("bfloat16", None, False),
              ("float16", None, True), ("bfloat16", None, True)]
    groups += [("tf32", chip, False) for chip in sorted({r.get("chip") for r in rows
                                                         if r.get("precision") == "tf32"})]
    for prec, chip, persistent in groups:
        for key in ("ratio", "ratio_pipelined"):
            vals = [r[key] for r in rows if r.get("precision", r["dtype"]) == prec
                    and (chip is None or r.get("chip") == chip) and key in r
                    and bool(r.get("persistent")) == persistent and "async" not in r
                    and "tiles" not in r]
            if vals:
                print(f"{prec}{' ' + chip if chip else ''}{' +persistent' if persistent else ''} "
                      f"{key}: median over {len(vals)} "
                      f"shapes x{statistics.median(vals):.2f}")
    # The portable pairs: each build's ratio to torch, and +async over plain.
    pairs = {}
    for r in rows:
        if "async" in r and "kiln_ms" in r:
            pairs.setdefault((r["shape"], r["dtype"], r.get("chip")), {})[r["async"]] = r
    for chip in sorted({k[2] for k in pairs}):
        for prec in ("float16", "bfloat16"):
            ps = [v for k, v in pairs.items() if k[2] == chip and k[1] == prec]
            for asy in (False, True):
                vals = [p[asy]["ratio"] for p in ps if asy in p]
                if vals:
                    print(f"{prec} {chip}{' +async' if asy else ''} ratio: median over "
                          f"{len(vals)} shapes x{statistics.median(vals):.2f}")
            gains = [p[False]["kiln_ms"] / p[True]["kiln_ms"] for p in ps
                     if False in p and True in p]
            if gains:
                print(f"{prec} {chip} +async speedup over plain: median over {len(gains)} "
                      f"shapes x{statistics.median(gains):.2f}")
    # Each --tiles tile against the default build of the same shape.
    default = {r["shape"]: r for r in rows if r.get("dtype") == "float16"
               and r.get("precision", "float16") == "float16" and not r.get("persistent")
               and "async" not in r and "tiles" not in r and "kiln_ms" in r}
    for t in sorted({r["tiles"] for r in rows if "tiles" in r}):
        gains = []
        for r in rows:
            if r.get("tiles") == t and "kiln_ms" in r and r["shape"] in default:
                g = default[r["shape"]]["kiln_ms"] / r["kiln_ms"]
                gains.append(g)
                print(f"tiles {t} {r['shape']:20s} x{g:.2f} over the default build")
        if gains:
            print(f"tiles {t}: median speedup over the default build over {len(gains)} "
                  f"shapes x{statistics.median(gains):.2f}")
    over = [f"{r['shape']} {r.get('chip')}" for r in rows if r.get("within_tol") is False]
    if over:
        print(f"float32 rows over their tolerance: {', '.join(over)}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--bf16", nargs="*", default=["4096^3", "bert-ffn1 b32", "odd 2000x3000x1000"])
    ap.add_argument("--tf32", nargs="*",
                    default=["4096^3", "bert-qkv b32", "bert-ffn1 b32", "bert-ffn2 b32",
                             "bert-fused-qkv b32", "bert b1 qkv", "bert b1 ffn1",
                             "odd 2000x3000x1000"],
                    help="shapes compiled as float32 with --precision=tf32")
    ap.add_argument("--tf32-chips", default="sm_90a,sm_80",
                    help="the chips each TF32 shape is compiled for")
    ap.add_argument("--fp32", nargs="*", default=["4096^3"],
                    help="shapes compiled as exact float32 (no --precision)")
    ap.add_argument("--persistent", type=int, default=1,
                    help="1: build each fp16/bf16 shape also with --gpu-persistent=on")
    ap.add_argument("--async-shapes", nargs="*",
                    default=["4096^3", "bert-qkv b32", "bert-ffn1 b32", "bert-ffn2 b32",
                             "odd 2000x3000x1000"],
                    help="shapes built for each --async-chips chip without and with "
                         "--gpu-async-copy=1")
    ap.add_argument("--async-chips", default="sm_80",
                    help="chips of the asynchronous-copy pairs (empty: none)")
    ap.add_argument("--tiles", default="192x128",
                    help="comma-separated tiles: each fp16 shape also built with "
                         "--gpu-tiles=T (empty: none)")
    ap.add_argument("--json")
    a = ap.parse_args()
    (prepare if a.mode == "prepare" else run)(a)


if __name__ == "__main__":
    main()
