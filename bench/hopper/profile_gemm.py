#!/usr/bin/env python3
"""One kernel at a time for Nsight Compute or the CUDA profiler: runs a
model.so (any inputs, seeded, shaped from the model's signature) or
torch.matmul of one shape a few times, without CUDA graphs, so that
`ncu --kernel-name ...` reads Kiln's contraction kernel and cuBLAS's for the
same problem in one device call (issue 12: where the mid-size GEMMs lose).

  there: ncu --clock-control none --section SpeedOfLight ... \\
             python3 bench/hopper/profile_gemm.py kiln LIB MODEL.so MODEL.onnx \\
                 [--dim batch=64]
         ncu ... python3 bench/hopper/profile_gemm.py torch M N K
         python3 bench/hopper/profile_gemm.py trace LIB MODEL.so MODEL.onnx [M N K]

`trace` times each kernel with torch.profiler (CUPTI timestamps, no
replay): Kiln's run and, given a shape, torch.matmul's, 20 runs each, and
prints the mean duration per kernel name.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))


def signature(onnx_path, dims=None):
    """The model's inputs and outputs as (ONNX element type, shape); a
    symbolic dim takes its value from `dims` (name: size)."""
    import onnx
    g = onnx.load(onnx_path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}

    def info(v):
        t = v.type.tensor_type
        return t.elem_type, [d.dim_value or (dims or {}).get(d.dim_param, 0)
                             for d in t.shape.dim]
    return ([info(v) for v in g.input if v.name not in inits], [info(v) for v in g.output])


def kiln_runner(lib, so, onnx_path, dims=None):
    import torch
    from kiln_tools.runtime import KilnModel
    dtypes = {10: torch.float16, 16: torch.bfloat16, 1: torch.float32}
    ins, outs = signature(onnx_path, dims)
    g = torch.Generator(device="cuda").manual_seed(0)
    xs = [(torch.randn(s, device="cuda", generator=g) * 0.5).to(dtypes[d]) for d, s in ins]
    ys = [torch.empty(s, device="cuda", dtype=dtypes[d]) for d, s in outs]
    km = KilnModel(lib, so, graphs=0)
    km.set_stream(torch.cuda.current_stream().cuda_stream)
    km.prepare(xs, ys)
    return km.run


def torch_runner(m, n, k):
    import torch
    a = torch.randn(m, k, device="cuda", dtype=torch.float16) * 0.5
    b = torch.randn(k, n, device="cuda", dtype=torch.float16) / k ** 0.5
    return lambda: torch.matmul(a, b)


def kernel_times(fn, runs=20):
    """Each kernel `fn` launches, by name: (microseconds per run, launches
    per run), from torch.profiler's CUPTI timestamps over `runs` calls (no
    replay; CUDA graphs' kernels included), the longest first."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(runs):
            fn()
        torch.cuda.synchronize()
    totals = {}
    for ev in prof.events():
        if ev.device_type.name == "CUDA":
            t = totals.setdefault(ev.name, [0.0, 0])
            t[0] += ev.device_time
            t[1] += 1
    return sorted(((name, us / runs, count / runs) for name, (us, count) in totals.items()),
                  key=lambda r: -r[1])


def print_kernel_times(label, rows, top=None):
    total = sum(us for _, us, _ in rows)
    launches = sum(n for _, _, n in rows)
    print(f"{label}: {total:.1f} us of kernels per run, {launches:.0f} launches")
    for name, us, count in rows[:top]:
        print(f"  {us:9.2f} us/run  x{count:.0f}  {name[:100]}")


def trace(fns, runs=20):
    for label, fn in fns:
        print_kernel_times(label, kernel_times(fn, runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["kiln", "torch", "trace"])
    ap.add_argument("args", nargs="+")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dim", action="append", default=[], metavar="NAME=SIZE",
                    help="kiln, trace: the size of a symbolic input dim (batch=64)")
    a = ap.parse_args()
    dims = {k: int(v) for k, v in (d.split("=") for d in a.dim)}
    import torch
    if a.mode == "kiln":
        fn = kiln_runner(*a.args[:3], dims)
    elif a.mode == "torch":
        fn = torch_runner(*map(int, a.args[:3]))
    else:
        fns = [(os.path.basename(a.args[1]), kiln_runner(*a.args[:3], dims))]
        if len(a.args) >= 6:
            fns.append(("torch.matmul", torch_runner(*map(int, a.args[3:6]))))
        trace(fns)
        return
    for _ in range(a.runs):
        fn()
    torch.cuda.synchronize()


if __name__ == "__main__":
    main()
