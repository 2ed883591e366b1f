"""QDQ models from float ones with onnxruntime's static quantizer, for the
int8 tests and benchmarks (docs/int8.md).

quantize_qdq() runs onnxruntime.quantization.quantize_static in QDQ format:
per-channel int8 weights (symmetric), uint8 activations with zero points
(its defaults), calibrated (min-max) on seeded inputs. The model is written
at IR version <= 10 and opset >= 13 first (what the quantizer's onnxruntime
loads), with its symbolic dims fixed to the calibration shapes. Constant
nodes become initializers first (constants_to_initializers): the quantizer
quantizes only initializers as weights (per channel, int8) and would treat
a Constant's weights as an activation (per tensor, uint8, quantized at run
time; PaddlePaddle's exports hold every weight in a Constant)."""
import os
import tempfile

import numpy as np
import onnx

from kiln_tools.feeds import seeded_inputs


def constants_to_initializers(m):
    """Moves the main graph's tensor-valued Constant nodes into initializers
    (in place), what onnxruntime's quant_pre_process does by optimizing."""
    keep = []
    for n in m.graph.node:
        value = [a for a in n.attribute if a.name == "value" and a.type == onnx.AttributeProto.TENSOR]
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and value:
            t = onnx.TensorProto()
            t.CopyFrom(value[0].t)
            t.name = n.output[0]
            m.graph.initializer.append(t)
        else:
            keep.append(n)
    del m.graph.node[:]
    m.graph.node.extend(keep)
    return m


def quantize_qdq(model, out_path, calibration=8, seed=0, dims=None, per_channel=True,
                 activation_type="QUInt8", weight_type="QInt8", op_types=None):
    """Writes the QDQ form of `model` (path or ModelProto) to `out_path`.
    `calibration`: a list of feeds dicts, or a number of seeded ones (drawn
    from `seed`, symbolic dims from `dims`). `op_types` restricts what is
    quantized (default: onnxruntime's, every op it knows). Returns the
    feeds used."""
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    m = onnx.load(model) if isinstance(model, str) else model
    if isinstance(calibration, int):
        rng = np.random.default_rng(seed)
        calibration = [seeded_inputs(m, rng, dims=dims) for _ in range(calibration)]
    feeds = list(calibration)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter(feeds)

        def get_next(self):
            return next(self.it, None)

    m = onnx.ModelProto.FromString(m.SerializeToString())
    m.ir_version = min(m.ir_version, 10)
    constants_to_initializers(m)
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "float.onnx")
        onnx.save(m, src)
        kwargs = {}
        if op_types is not None:
            kwargs["op_types_to_quantize"] = list(op_types)
        quantize_static(src, out_path, Reader(), quant_format=QuantFormat.QDQ,
                        per_channel=per_channel,
                        activation_type=getattr(QuantType, activation_type),
                        weight_type=getattr(QuantType, weight_type), **kwargs)
    return feeds


def he_weights(rng, *shape, scale=None):
    """Seeded float32 weights of `shape` with He's scale sqrt(2 / fan_in)
    (fan_in: the product of the dims after the first for 4-D filters, else
    the first dim, a MatMul's K), or `scale` when given: the weights of the
    int8 tests' small nets."""
    fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0]
    return (rng.standard_normal(shape) * (scale or np.sqrt(2.0 / fan_in))).astype(np.float32)


def int8_convnet(path, rng):
    """The int8 tests' small float conv net, written to `path` with weights
    from `rng` (he_weights): Conv 3->16 + Relu, MaxPool 2x2, a strided Conv
    16->32 + Relu, a 1x1 Conv 32->32 with a residual Add and Relu,
    GlobalAveragePool, Flatten, Gemm 32->10; input x [4, 3, 16, 16], output
    y [4, 10]. Returns `path`."""
    from onnx import TensorProto, helper, numpy_helper

    def w(*shape, scale=None):
        return he_weights(rng, *shape, scale=scale)

    inits = [numpy_helper.from_array(w(16, 3, 3, 3), "c1"),
             numpy_helper.from_array(w(16, scale=0.1), "c1b"),
             numpy_helper.from_array(w(32, 16, 3, 3), "c2"),
             numpy_helper.from_array(w(32, scale=0.1), "c2b"),
             numpy_helper.from_array(w(32, 32, 1, 1), "c3"),
             numpy_helper.from_array(w(32, scale=0.1), "c3b"),
             numpy_helper.from_array(w(10, 32, scale=0.3), "fc"),
             numpy_helper.from_array(w(10, scale=0.1), "fcb")]
    node = helper.make_node
    nodes = [node("Conv", ["x", "c1", "c1b"], ["h1"], name="conv1", pads=[1, 1, 1, 1]),
             node("Relu", ["h1"], ["r1"], name="relu1"),
             node("MaxPool", ["r1"], ["p1"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
             node("Conv", ["p1", "c2", "c2b"], ["h2"], name="conv2", pads=[1, 1, 1, 1],
                  strides=[2, 2]),
             node("Relu", ["h2"], ["r2"], name="relu2"),
             node("Conv", ["r2", "c3", "c3b"], ["h3"], name="conv3"),
             node("Add", ["h3", "r2"], ["s3"], name="residual"),
             node("Relu", ["s3"], ["r3"], name="relu3"),
             node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
             node("Flatten", ["g"], ["f"], name="flat"),
             node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "convnet", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                ir_version=8), path)
    return path


def output_scale(qdq):
    """The scale of the DequantizeLinear that writes `qdq`'s (a ModelProto)
    first output: one step of its quantization."""
    from onnx import numpy_helper

    inits = {i.name: numpy_helper.to_array(i) for i in qdq.graph.initializer}
    out = qdq.graph.output[0].name
    for n in qdq.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out:
            return float(inits[n.input[1]].reshape(-1)[0])
    raise SystemExit(f"no DequantizeLinear writes {out}")
