# RUN: %python %s %t 100
"""Feeds the importer malformed models: a valid seed model with bytes
flipped, overwritten, inserted, or cut off, and protobuf-level mutations of
its fields (dims, types, attributes, names). kiln-translate must answer each
with success (0) or an error (1), never a crash (a signal)."""
import os
import random
import subprocess
import sys

import kiln_tools

fuzz_models = kiln_tools.project_module("test/Import/Onnx/Inputs/fuzz_models.py")

workdir = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 100
os.makedirs(workdir, exist_ok=True)
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1234)
seed = fuzz_models.seed_model()
seed_bytes = seed.SerializeToString()


def byte_variant(data):
    b = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0:  # flip bits
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:  # overwrite with interesting bytes
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] = rng.choice([0x00, 0x01, 0x7F, 0x80, 0xFF, 0x08, 0x10, 0x12])
    elif kind == 2:  # truncate
        b = b[: rng.randrange(len(b))]
    else:  # insert random bytes
        i = rng.randrange(len(b))
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
    return bytes(b)


def field_variant():
    """A structurally valid protobuf whose content is wrong."""
    m = fuzz_models.seed_model()
    g = m.graph
    node = rng.choice(list(g.node))
    kind = rng.randrange(10)
    if kind == 0 and node.attribute:
        a = rng.choice(list(node.attribute))
        a.type = rng.randrange(0, 15)  # kind that does not match the payload
    elif kind == 1 and g.initializer:
        t = rng.choice(list(g.initializer))
        t.dims.append(rng.choice([0, -1, 3, 1 << 40, (1 << 62)]))
    elif kind == 2 and g.initializer:
        rng.choice(list(g.initializer)).data_type = rng.randrange(0, 26)
    elif kind == 3:
        node.op_type = rng.choice(["If", "Loop", "Softmax", "Clip", "Slice", "Constant", "Cast", "Reshape", ""])
    elif kind == 4:
        node.input.append(rng.choice(["", "x", "w", "nope"]))
    elif kind == 5:
        node.output.append(rng.choice(["", "extra", "x"]))
    elif kind == 6:
        m.opset_import[0].version = rng.choice([0, 1, 6, 9, 11, 12, 13, 100, -5])
    elif kind == 7:
        t = rng.choice([g.input, g.output])[0].type.tensor_type
        t.elem_type = rng.randrange(0, 26)
        t.shape.dim.add().dim_value = rng.choice([-7, 0, 1 << 62])
    elif kind == 8 and node.attribute:
        a = rng.choice(list(node.attribute))
        a.name = rng.choice(["", "axis", "perm", "to", a.name])
    else:
        del node.input[:]
    return m.SerializeToString()


crashes = []
for n in range(count):
    data = byte_variant(seed_bytes) if n % 2 == 0 else field_variant()
    path = os.path.join(workdir, f"variant{n}.onnx")
    with open(path, "wb") as f:
        f.write(data)
    p = subprocess.run(["kiln-translate", "--import-onnx", path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    if p.returncode not in (0, 1):
        crashes.append((path, p.returncode, p.stderr.decode(errors="replace")[-500:]))
    else:
        os.remove(path)

for path, rc, err in crashes:
    print(f"CRASH rc={rc} on {path}\n{err}")
print(f"{count} variants, {len(crashes)} crashes")
sys.exit(1 if crashes else 0)
