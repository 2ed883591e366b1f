# RUN: rm -rf %t
# RUN: %python %s %t
# RUN: kiln-translate --import-onnx %t/ok/model.onnx | FileCheck %s --check-prefix=OK
# RUN: not kiln-translate --import-onnx %t/missing/model.onnx 2>&1 | FileCheck %s --check-prefix=MISSING
# RUN: not kiln-translate --import-onnx %t/range/model.onnx 2>&1 | FileCheck %s --check-prefix=RANGE
# RUN: not kiln-translate --import-onnx %t/escape/model.onnx 2>&1 | FileCheck %s --check-prefix=ESCAPE
# RUN: not kiln-translate --import-onnx %t/link_out/model.onnx 2>&1 | FileCheck %s --check-prefix=LINK-OUT
# RUN: not kiln-translate --import-onnx %t/dev_zero/model.onnx 2>&1 | FileCheck %s --check-prefix=DEV-ZERO
# RUN: not timeout 60 kiln-translate --import-onnx %t/fifo/model.onnx 2>&1 | FileCheck %s --check-prefix=FIFO
# RUN: not kiln-translate --import-onnx %t/length/model.onnx 2>&1 | FileCheck %s --check-prefix=LENGTH
# RUN: not kilnc %t/link_out/model.onnx --external-weights -o %t/link_out.so 2>&1 | FileCheck %s --check-prefix=LINK-OUT
# RUN: not timeout 60 kilnc %t/fifo/model.onnx -o %t/fifo.so 2>&1 | FileCheck %s --check-prefix=FIFO
# RUN: not timeout 60 kilnc %t/fifo/weights.bin -o %t/fifo.so 2>&1 | FileCheck %s --check-prefix=FIFO-MODEL
"""Initializers stored as external data (one file next to the model) import
like embedded ones; a missing file, a range past its end, a location
outside the model's folder (by name or through a symlink), a file that is
not regular (a device or a FIFO, refused before it is opened for reading, so
nothing blocks or reads without end) and a length other than the tensor's
are errors naming the tensor."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# OK: arith.constant dense_resource<w> : tensor<4x8xf32>
# OK: arith.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
# OK: w: "0x08000000000000000000803F00000040
# MISSING: error: tensor 'w': cannot read external data file '{{.*}}weights.bin'
# RANGE: error: tensor 'w': external data [4096, 4224) is outside '{{.*}}weights.bin' ({{[0-9]+}} bytes)
# ESCAPE: error: tensor 'w': external data location '../weights.bin' must be a relative path inside the model's folder
# LINK-OUT: error: tensor 'w': external data location 'weights.bin' resolves to '/etc/passwd', outside the model's folder '{{.*}}link_out'
# DEV-ZERO: error: tensor 'w': external data location 'weights.bin' resolves to '/dev/zero', outside the model's folder
# FIFO: error: tensor 'w': cannot read external data file '{{.*}}weights.bin': not a regular file (a FIFO)
# FIFO-MODEL: weights.bin:0:0: error: cannot read '{{.*}}weights.bin': not a regular file (a FIFO)
# LENGTH: error: tensor 'w' needs 128 bytes of data, its external data [0, 64) in '{{.*}}weights.bin' has 64


def model():
    w = numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "w")
    b = numpy_helper.from_array(np.array([1.0, 2.0], np.float32), "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"]),
         helper.make_node("Identity", ["b"], ["z"])], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])], [w, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def save(name, edit=None):
    d = os.path.join(sys.argv[1], name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    onnx.save(model(), path, save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    if edit:
        m = onnx.load(path, load_external_data=False)
        edit(d, m)
        onnx.save(m, path)


def set_kv(m, key, value):
    for kv in m.graph.initializer[0].external_data:
        if kv.key == key:
            kv.value = value


save("ok")
save("missing", lambda d, m: os.remove(os.path.join(d, "weights.bin")))
save("range", lambda d, m: set_kv(m, "offset", "4096"))
save("escape", lambda d, m: set_kv(m, "location", "../weights.bin"))


def replace_with(make):
    def edit(d, m):
        path = os.path.join(d, "weights.bin")
        os.remove(path)
        make(path)
    return edit


save("link_out", replace_with(lambda p: os.symlink("/etc/passwd", p)))
save("dev_zero", replace_with(lambda p: os.symlink("/dev/zero", p)))
save("fifo", replace_with(os.mkfifo))
save("length", lambda d, m: set_kv(m, "length", "64"))
