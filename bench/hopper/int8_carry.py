"""How an int8 .so reaches the device machine for bench/hopper/networks.py
(its docstring: route (a), --int8-parts): a .so larger than a call carries
is cut down to what run cannot recompute (regen_int8, join_regen: the
MatMuls' int8 weights recomputed from the regenerated float model) or, as
the fallback, split into parts carried in earlier calls of the lease
(split_parts, join_parts). Both are checked against the whole file's
sha256 there."""
import os

import kiln_tools

def split_parts(directory, so, mib):
    """Cuts `so` into DIR.part1, DIR.part2, ... of equal sizes, at most `mib`
    MiB each (removing it from DIR); returns their records for the
    manifest."""
    size = os.path.getsize(so)
    count = -(-size // (mib << 20))
    parts = []
    with open(so, "rb") as f:
        for k in range(1, count + 1):
            chunk = f.read(-(-size // count))
            d = f"{os.path.normpath(directory)}.part{k}"
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, os.path.basename(so) + f".{k}")
            with open(path, "wb") as out:
                out.write(chunk)
            parts.append({"dir": os.path.basename(d), "file": os.path.basename(path),
                          "bytes": len(chunk), "sha256": kiln_tools.file_sha256(path)})
    os.remove(so)
    return parts


def int8_matmul_weights(model_path):
    """Each MatMul's constant float weights [K, N] of the model at
    `model_path` quantized as Kiln's PTQ does (kiln-onnx-insert-qdq's
    quantizeWeights: per column n, s = f32(max |W[:, n]|) / 127 in f32, q =
    round half to even of f32(W) / s, clamped to [-127, 127]) and laid out
    K-major ([N, K], what the sm_90a product reads): {name: bytes}."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(model_path)
    inits = {t.name: t for t in model.graph.initializer}
    blobs = {}
    for node in model.graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2 or node.input[1] not in inits:
            continue
        w = numpy_helper.to_array(inits[node.input[1]])
        if w.dtype != np.float32 or w.ndim != 2:
            continue
        m = np.abs(w).max(axis=0).astype(np.float32)
        s = np.where((m > 0) & np.isfinite(m), m / np.float32(127), np.float32(1))
        q = np.clip(np.rint(w / s.astype(np.float32)), -127, 127).astype(np.int8)
        blobs[node.input[1]] = np.ascontiguousarray(q.T).tobytes()
    return blobs


def regen_int8(so, filled, mib):
    """The int8 .so without the bytes run can recompute: every MatMul's
    quantized weights (int8_matmul_weights of the filled model) found in
    the .so are zeroed and the rest gzipped to NAME.so.gz in DIR; returns
    the manifest record (the file, each blob's initializer, offset and size)
    or None when the result would still be larger than `mib` MiB (or none
    was found)."""
    import gzip

    data = bytearray(open(so, "rb").read())
    found = []
    for name, blob in int8_matmul_weights(filled).items():
        at = data.find(blob)
        if at >= 0 and data.find(blob, at + 1) < 0:
            found.append({"init": name, "offset": at, "bytes": len(blob)})
            data[at:at + len(blob)] = bytes(len(blob))
    if not found:
        return None
    gz = so + ".gz"
    with gzip.open(gz, "wb", compresslevel=6) as f:
        f.write(data)
    if os.path.getsize(gz) > mib << 20:
        os.remove(gz)
        return None
    return {"file": os.path.basename(gz), "blobs": found,
            "zeroed_bytes": sum(b["bytes"] for b in found)}


def join_regen(directory, r, filled):
    """The .so of row `r` rebuilt from its gzipped remainder and the int8
    weights recomputed from the regenerated float model; an error or None."""
    import gzip

    path = os.path.join(directory, r["so"])
    gz = os.path.join(directory, r["regen"]["file"])
    if not os.path.exists(gz):
        return f"{r['regen']['file']} is missing"
    with gzip.open(gz, "rb") as f:
        data = bytearray(f.read())
    blobs = int8_matmul_weights(filled)
    for b in r["regen"]["blobs"]:
        blob = blobs.get(b["init"])
        if blob is None or len(blob) != b["bytes"]:
            return f"{b['init']}: no quantized weights of {b['bytes']} bytes to put back"
        data[b["offset"]:b["offset"] + b["bytes"]] = blob
    with open(path + ".tmp", "wb") as out:
        out.write(data)
    os.replace(path + ".tmp", path)
    if kiln_tools.file_sha256(path) != r["so_sha256"]:
        os.remove(path)
        return (f"{r['so']} rebuilt from {r['regen']['file']} and the recomputed int8 weights "
                "differs from the build machine's (sha256)")
    return None


def join_parts(directory, r):
    """The .so of row `r` whole in DIR (from the parts carried next to DIR
    in earlier calls when it was split); returns an error or None."""
    path = os.path.join(directory, r["so"])
    if os.path.exists(path) and kiln_tools.file_sha256(path) == r["so_sha256"]:
        return None
    if r.get("regen"):
        return join_regen(directory, r, os.path.join(directory, r["net"] + ".filled.onnx"))
    if not r.get("parts"):
        return f"{r['so']} is missing"
    parent = os.path.dirname(os.path.normpath(os.path.abspath(directory)))
    for p in r["parts"]:
        src = os.path.join(parent, p["dir"], p["file"])
        if not os.path.exists(src):
            return (f"part {p['dir']} is not on this machine: carry each of "
                    f"{', '.join(q['dir'] for q in r['parts'])} in an earlier call of this lease")
    with open(path + ".tmp", "wb") as out:
        for p in r["parts"]:
            with open(os.path.join(parent, p["dir"], p["file"]), "rb") as f:
                out.write(f.read())
    os.replace(path + ".tmp", path)
    if kiln_tools.file_sha256(path) != r["so_sha256"]:
        os.remove(path)
        return f"{r['so']} joined from its parts differs from the build machine's (sha256)"
    return None
