#!/usr/bin/env python3
"""Single-MatMul ONNX models compiled by kilnc, timed on the GPU against
torch.matmul in the same process (issue 12's GEMM measurement).

  here:  python3 bench/hopper/kilnc_gemm.py prepare DIR [--chip sm_90a]
  there: python3 bench/hopper/kilnc_gemm.py run DIR [--json F]

Each model is Y = MatMul(A, B) with A [M, K] and B [K, N] graph inputs
(float16 or bfloat16), so the payload stays small; the runtime's C API runs
it on torch's stream on device tensors (kiln_instance_run_device, CUDA
graphs on). The result is checked against an fp32 product of the same
inputs before timing; the runtime's per-kernel times show what the MatMul
kernel itself takes.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, HERE)

from shapes import SHAPES  # noqa: E402


def prepare(a):
    import onnx
    from onnx import TensorProto, helper

    os.makedirs(a.dir, exist_ok=True)
    kilnc = os.path.join(ROOT, "build", "bin", "kilnc")
    man = []
    for name, (M, N, K) in SHAPES.items():
        for dt, tp in (("float16", TensorProto.FLOAT16), ("bfloat16", TensorProto.BFLOAT16)):
            if dt == "bfloat16" and name not in a.bf16:
                continue
            g = helper.make_graph(
                [helper.make_node("MatMul", ["A", "B"], ["Y"], name="matmul")], "gemm",
                [helper.make_tensor_value_info("A", tp, [M, K]),
                 helper.make_tensor_value_info("B", tp, [K, N])],
                [helper.make_tensor_value_info("Y", tp, [M, N])])
            model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
            tag = f"{name.replace(' ', '_').replace('^', 'p')}_{dt}"
            path = os.path.join(a.dir, tag + ".onnx")
            onnx.save(model, path)
            so = os.path.join(a.dir, tag + ".so")
            t0 = time.time()
            p = subprocess.run([kilnc, path, f"--target=cuda:{a.chip}", "-o", so],
                               capture_output=True, text=True)
            ok = p.returncode == 0
            print(f"{tag}: {'ok' if ok else 'FAILED ' + p.stderr[:300]} ({time.time() - t0:.1f} s)",
                  flush=True)
            if ok:
                os.remove(path)
            man.append(dict(shape=name, M=M, N=N, K=K, dtype=dt, so=tag + ".so", ok=ok))
    json.dump(man, open(os.path.join(a.dir, "manifest.json"), "w"), indent=1)


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
        A = (torch.randn(M, K, device="cuda") * 0.5).to(dt)
        B = (torch.randn(K, N, device="cuda") / K ** 0.5).to(dt)
        ref = A.float() @ B.float()
        Y = torch.full((M, N), float("nan"), device="cuda", dtype=dt)
        row = dict(m)
        try:
            km = KilnModel(lib, os.path.join(a.dir, m["so"]))
            km.set_stream(stream.cuda_stream)
            km.prepare([A, B], [Y])
            km.run()
            torch.cuda.synchronize()
            err = ((Y.float() - ref).abs().max() / ref.abs().max()).item()
            row["max_rel_err"] = err if torch.isfinite(Y.float()).all().item() else float("inf")
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
        print(f"{m['shape']:20s} {m['dtype']:9s} kiln {row.get('kiln_ms', float('nan')):8.3f} ms "
              f"{row.get('kiln_tflops', 0):5.0f} TF/s  torch {row['torch_ms']:8.3f} ms "
              f"{row['torch_tflops']:5.0f} TF/s  x{row.get('ratio', 0):.2f}  pipelined "
              f"x{row.get('ratio_pipelined', 0):.2f}  no graph {row.get('kiln_nograph_ms', 0):.3f} ms  "
              f"err {row.get('max_rel_err', float('nan')):.1e} {row.get('error', '')}", flush=True)
    import statistics
    for dt in ("float16", "bfloat16"):
        for key in ("ratio", "ratio_pipelined"):
            vals = [r[key] for r in rows if r["dtype"] == dt and key in r]
            if vals:
                print(f"{dt} {key}: median over {len(vals)} shapes x{statistics.median(vals):.2f}")
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prepare", "run"])
    ap.add_argument("dir")
    ap.add_argument("--chip", default="sm_90a")
    ap.add_argument("--bf16", nargs="*", default=["4096^3", "bert-ffn1 b32", "odd 2000x3000x1000"])
    ap.add_argument("--json")
    a = ap.parse_args()
    (prepare if a.mode == "prepare" else run)(a)


if __name__ == "__main__":
    main()
