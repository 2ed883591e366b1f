"""QDQ models from float ones with onnxruntime's static quantizer, for the
int8 tests and benchmarks (docs/int8.md).

quantize_qdq() runs onnxruntime.quantization.quantize_static in QDQ format:
per-channel int8 weights (symmetric), uint8 activations with zero points
(its defaults), calibrated (min-max) on seeded inputs. The model is written
at IR version <= 10 and opset >= 13 first (what the quantizer's onnxruntime
loads), with its symbolic dims fixed to the calibration shapes."""
import os
import tempfile

import numpy as np
import onnx

from kiln_tools.feeds import seeded_inputs


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
