"""Seeded feeds: a model's inputs from its signature, and weights scaled like
a trained network's (for graphs whose weights are inputs)."""
import numpy as np
import onnx


def _model(model):
    return onnx.load(model, load_external_data=False) if isinstance(model, str) else model


def _rng(seed):
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def seeded_inputs(model, seed=0, dims=None, default_dim=1, int_high=None, skip=None):
    """{name: array} for the graph inputs of `model` (path or ModelProto),
    in signature order, drawn from `seed` (an int or a numpy Generator).

    Symbolic dims take `dims[name]`, else `default_dim`. Floats are N(0, 1)
    in the input's dtype; int64/int32 inputs are token ids in [0, int_high),
    int_high defaulting to the smallest row count of a 2-D initializer (the
    embedding tables), or 100 without one; bools are fair coin flips.
    Skipped: the names in `skip` (default: the initializers)."""
    m = _model(model)
    rng = _rng(seed)
    dims = dims or {}
    if skip is None:
        skip = {i.name for i in m.graph.initializer}
    feeds = {}
    for inp in m.graph.input:
        if inp.name in skip:
            continue
        tt = inp.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, default_dim)
                 for d in tt.shape.dim]
        et = tt.elem_type
        if et in (onnx.TensorProto.INT64, onnx.TensorProto.INT32):
            high = int_high
            if high is None:
                rows = [int(i.dims[0]) for i in m.graph.initializer if len(i.dims) == 2]
                high = min(rows) if rows else 100
            dtype = np.int64 if et == onnx.TensorProto.INT64 else np.int32
            feeds[inp.name] = rng.integers(0, high, shape).astype(dtype)
        elif et == onnx.TensorProto.BOOL:
            feeds[inp.name] = rng.integers(0, 2, shape).astype(bool)
        else:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(et)
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def trained_weights(model, seed=0):
    """Seeded float32 values for every graph input of fixed shape that a node
    consumes (a weight), scaled like a trained network's: Conv weights He
    normal by fan-in, MatMul/Gemm weights sqrt(1 / fan_in), embeddings
    (Gather data) N(0, 0.02), LayerNorm/BatchNorm scale 1 + N(0, 0.1),
    BatchNorm variance U(0.5, 1.5), anything else (biases) N(0, 0.02)."""
    m = _model(model)
    rng = _rng(seed)
    role = {}
    for node in m.graph.node:
        for i, name in enumerate(node.input):
            role.setdefault(name, (node.op_type, i, node))
    feeds = {}
    for vi in m.graph.input:
        dims = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if any(d.dim_param for d in vi.type.tensor_type.shape.dim) or vi.name not in role:
            continue
        op, idx, node = role[vi.name]
        shape = tuple(dims)
        n = rng.standard_normal(shape)
        if op == "Conv" and idx == 1:
            w = n * np.sqrt(2.0 / max(1, int(np.prod(shape[1:]))))
        elif op in ("MatMul", "Gemm") and len(shape) == 2 and idx == 1:
            trans = op == "Gemm" and any(a.name == "transB" and a.i for a in node.attribute)
            fan_in = shape[1] if trans else shape[0]
            w = n * np.sqrt(1.0 / fan_in)
        elif op == "Gather" and idx == 0:
            w = n * 0.02
        elif op in ("LayerNormalization", "BatchNormalization") and idx == 1:
            w = 1.0 + 0.1 * n
        elif op == "BatchNormalization" and idx == 4:
            w = rng.uniform(0.5, 1.5, shape)
        else:
            w = 0.02 * n
        feeds[vi.name] = w.astype(np.float32)
    return feeds


def smooth_picture(rng, h, w, c=3):
    """A picture in [0, 1], [c, h, w]: a smooth random field (a 6x6 grid of
    random colours, bilinearly upsampled), a few flat rectangles and fine
    noise."""
    grid = rng.uniform(0, 1, (c, 6, 6))
    ys, xs = np.linspace(0, 5, h), np.linspace(0, 5, w)
    y0, x0 = np.minimum(ys.astype(int), 4), np.minimum(xs.astype(int), 4)
    fy, fx = (ys - y0)[:, None], (xs - x0)[None, :]
    g = (grid[:, y0][:, :, x0] * (1 - fy) * (1 - fx) + grid[:, y0 + 1][:, :, x0] * fy * (1 - fx)
         + grid[:, y0][:, :, x0 + 1] * (1 - fy) * fx + grid[:, y0 + 1][:, :, x0 + 1] * fy * fx)
    for _ in range(int(rng.integers(2, 6))):
        r0, c0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        r1, c1 = r0 + int(rng.integers(h // 8, h // 2 + 1)), c0 + int(rng.integers(w // 8, w // 2 + 1))
        g[:, r0:r1, c0:c1] = rng.uniform(0, 1, (c, 1, 1))
    return np.clip(g + rng.normal(0, 0.03, g.shape), 0, 1)


def image_inputs(model, seed=0, dims=None, mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, 0.225),
                 picture=None):
    """Like seeded_inputs, but a float input of rank 4 with 1 or 3 channels
    (NCHW, or NHWC when its last dim is 3 and its second is not) holds
    pictures instead of white noise: `picture(rng, h, w)` ([3, h, w] in
    [0, 1]; smooth_picture by default), normalized by `mean` and `std`
    (ImageNet's by default). Natural images are spatially correlated,
    bounded and not zero-mean; N(0, 1) noise is none of these, and
    calibration ranges measured on noise do not fit images."""
    m = _model(model)
    rng = _rng(seed)
    feeds = seeded_inputs(m, rng, dims)
    picture = picture or smooth_picture
    for name, x in feeds.items():
        if x.dtype.kind != "f" or x.ndim != 4:
            continue
        nhwc = x.shape[3] == 3 and x.shape[1] != 3
        n, c, h, w = (x.shape[0], x.shape[3], x.shape[1], x.shape[2]) if nhwc else x.shape
        if c not in (1, 3):
            continue
        imgs = np.stack([picture(rng, h, w)[:c] for _ in range(n)])
        mu = np.array(mean[:c]).reshape(1, c, 1, 1)
        sd = np.array(std[:c]).reshape(1, c, 1, 1)
        out = (imgs - mu) / sd
        feeds[name] = (out.transpose(0, 2, 3, 1) if nhwc else out).astype(x.dtype)
    return feeds
