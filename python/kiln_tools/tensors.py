"""TensorProto .pb files (kiln-run's --input/--output-dir format) and numpy."""
import os

import onnx
from onnx import numpy_helper


def write_pb(path, array, name=""):
    """Writes `array` as a TensorProto named `name`."""
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(array, name).SerializeToString())
    return path


def read_pb_named(path):
    """(name, array) of a TensorProto file."""
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def read_pb(path):
    return read_pb_named(path)[1]


def write_inputs(feeds, directory):
    """Writes feeds ({name: array} or [(name, array)]) as DIR/input_<i>.pb;
    returns [(name, path)] in order."""
    os.makedirs(directory, exist_ok=True)
    items = feeds.items() if isinstance(feeds, dict) else feeds
    return [(name, write_pb(os.path.join(directory, f"input_{i}.pb"), value, name))
            for i, (name, value) in enumerate(items)]


def numbered(directory, prefix):
    """DIR/<prefix>_<i>.pb for i = 0, 1, ... in numeric order."""
    names = [f for f in os.listdir(directory)
             if f.startswith(prefix + "_") and f.endswith(".pb") and f[len(prefix) + 1:-3].isdigit()]
    return [os.path.join(directory, f) for f in sorted(names, key=lambda f: int(f[len(prefix) + 1:-3]))]


def read_outputs(outdir):
    """[(name, array)] of the output_<i>.pb files kiln-run wrote into OUTDIR."""
    return [read_pb_named(p) for p in numbered(outdir, "output")]
