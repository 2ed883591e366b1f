# RUN: %python %s lit %t
# REQUIRES: ptxas
"""int8 on the GPU (issue 19): QDQ models (onnxruntime's quantize_static of
float models: an MLP and a conv net at the sizes where the tiled
contraction takes the matrix instruction; u8 x s8 per-channel, s8 x s8
per-tensor) compiled with `--target=cuda` (the sm_90a image and the
portable sm_80 one), whose integer products run as warpgroup MMA
(`wgmma` m64nNk32 .s32.u8.s8 / .s8.s8, sm_90a) or `mma.sync` m16n8k32 on
8-bit operands. Checked against onnxruntime running the same QDQ model on
its int8 CPU kernels, within one step of the output's quantization (the
scale of the model's last DequantizeLinear: Kiln's fused layers compute the
same int32 sums and the same float32 requantization; a value on a rounding
tie in the float ops kept between them may round one step the other way,
see test/e2e/int8_qdq.py).

Here (lit): the cuda build's report (its sm_90a image) names an integer
matrix instruction for every int8 product, wgmma for the MLP's two and the
conv nets' two 128-, 64- and 32-channel convolutions, and the run half is checked on the CPU build. The
GPU half (no GPU on the machine that compiles):

  .venv/bin/python test/e2e/int8_gpu.py prepare .gpu/int8
  # carry .gpu/int8 to the GPU machine, then there:
  python3 test/e2e/int8_gpu.py run .gpu/int8

run (python3 alone) runs kiln-run --expect on every set with both images
(KILN_CUDA_CHIP=sm_80 picks the portable one) and exits 1 on a mismatch.
"""
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def models():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    from kiln_tools.quantize import he_weights

    rng = np.random.default_rng(19)

    def w(*shape, scale=None):
        return he_weights(rng, *shape, scale=scale)

    def mlp():
        # [256, 512] x [512, 384] + bias, Relu, x [384, 200]^T (Gemm transB).
        inits = [numpy_helper.from_array(w(512, 384), "w1"),
                 numpy_helper.from_array(w(384, scale=0.1), "b1"),
                 numpy_helper.from_array(w(200, 384), "w2"),
                 numpy_helper.from_array(w(200, scale=0.1), "b2")]
        nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
                 helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
                 helper.make_node("Relu", ["hb"], ["a"], name="relu1"),
                 helper.make_node("Gemm", ["a", "w2", "b2"], ["y"], name="fc2", transB=1)]
        graph = helper.make_graph(
            nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 512])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [256, 200])], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                 ir_version=8)

    def convnet(c=128):
        # c channels into conv2 and conv3: sm_90a's warpgroup kernel copies
        # 128 channels (bytes) per filter tap, or 64 with the 64-byte
        # swizzle when c <= 64 (32 of them real and 32 out-of-bounds zeros
        # when c = 32); conv1's 16 stay on mma.sync.
        inits = [numpy_helper.from_array(w(c, 16, 3, 3), "c1"),
                 numpy_helper.from_array(w(c, scale=0.1), "c1b"),
                 numpy_helper.from_array(w(c, c, 3, 3), "c2"),
                 numpy_helper.from_array(w(c, scale=0.1), "c2b"),
                 numpy_helper.from_array(w(c, c, 1, 1), "c3"),
                 numpy_helper.from_array(w(c, scale=0.1), "c3b")]
        nodes = [
            helper.make_node("Conv", ["x", "c1", "c1b"], ["a1"], pads=[1, 1, 1, 1], name="conv1"),
            helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "c2", "c2b"], ["a2"], pads=[1, 1, 1, 1],
                             strides=[2, 2], name="conv2"),
            helper.make_node("Relu", ["a2"], ["r2"], name="relu2"),
            helper.make_node("Conv", ["r2", "c3", "c3b"], ["a3"], name="conv3"),
            helper.make_node("Add", ["a3", "r2"], ["y"], name="residual"),
        ]
        graph = helper.make_graph(
            nodes, "convnet",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 16, 32, 32])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, c, 16, 16])], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                 ir_version=8)

    def stemnet():
        # An RGB stem (7x7, stride 2, 3 channels padded to 4 for the int8
        # products): an im2col GEMM (K = 196 padded to 208, K-major
        # filters) on the integer matrix instructions, then a 3x3
        # convolution of 64 channels.
        inits = [numpy_helper.from_array(w(64, 3, 7, 7), "s1"),
                 numpy_helper.from_array(w(64, scale=0.1), "s1b"),
                 numpy_helper.from_array(w(64, 64, 3, 3), "s2"),
                 numpy_helper.from_array(w(64, scale=0.1), "s2b")]
        nodes = [
            helper.make_node("Conv", ["x", "s1", "s1b"], ["a1"], pads=[3, 3, 3, 3],
                             strides=[2, 2], name="stem"),
            helper.make_node("Relu", ["a1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "s2", "s2b"], ["y"], pads=[1, 1, 1, 1],
                             name="conv2"),
        ]
        graph = helper.make_graph(
            nodes, "stemnet",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 3, 64, 64])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 64, 32, 32])], inits)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                 ir_version=8)

    # (name, model, quantize_qdq options, int8 products expected, of them
    # on sm_90a's warpgroup MMA)
    return [("mlp_u8s8_channel", mlp, {}, 2, 2),
            ("mlp_s8s8_tensor", mlp, {"per_channel": False, "activation_type": "QInt8"}, 2, 2),
            ("conv_u8s8_channel", convnet, {}, 3, 2),
            ("conv_s8s8_tensor", convnet, {"per_channel": False, "activation_type": "QInt8"}, 3, 2),
            ("conv64_u8s8_channel", lambda: convnet(64), {}, 3, 2),
            ("conv32_u8s8_channel", lambda: convnet(32), {}, 3, 2),
            ("stem_u8s8_channel", stemnet, {}, 2, 2)]


def prepare(stage, target="cuda"):
    sys.path.insert(0, os.path.join(ROOT, "python"))
    import numpy as np
    import onnx

    import kiln_tools
    from kiln_tools.quantize import output_scale, quantize_qdq
    from kiln_tools.tensors import write_pb

    shutil.rmtree(stage, ignore_errors=True)
    os.makedirs(stage)
    rng = np.random.default_rng(7)
    manifest = []
    for name, build, options, products, on_wgmma in models():
        model = build()
        shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        path = os.path.join(stage, name + ".onnx")
        calib = [{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)]
        quantize_qdq(model, path, calibration=calib, **options)
        step = output_scale(onnx.load(path))
        so = os.path.join(stage, name + ".so")
        report = os.path.join(stage, name + ".report.txt")
        p = kiln_tools.compile_model(path, so, flags=[f"--target={target}",
                                                      f"--report={report}"])
        assert p.returncode == 0, p.stderr
        if target == "cuda":
            # Every int8 product on an integer matrix instruction (the report
            # shows the sm_90a image): warpgroup MMA (wgmma m64nNk32) where
            # the kernel takes it, mma.sync m16n8k32 otherwise (convolutions
            # of fewer than 32 channels).
            text = open(report).read()
            wgmma = len(re.findall(r"wgmma m64n\d+k32 [us]8x[us]8", text))
            found = wgmma + text.count("matrix instruction 16x8x32")
            assert found >= products and wgmma >= on_wgmma, (
                f"{name}: {found} int8 products on a matrix instruction ({wgmma} on "
                f"wgmma), expected {products} ({on_wgmma}):\n{text}")
            # Constant weights come K-major from the compiler (FHWC filters,
            # [N, K] matmul weights): no launch transposes them every run.
            assert "B transposed to K-major" not in text, (
                f"{name}: a product transposes its constant weights every run:\n{text}")
        for k in range(2):
            scale = 1.5 if k == 1 else 1.0  # the second set past the calibrated range
            feeds = {"x": (rng.standard_normal(shape) * scale).astype(np.float32)}
            d = os.path.join(stage, f"{name}_set{k}")
            os.makedirs(d)
            write_pb(os.path.join(d, "input_0.pb"), feeds["x"], "x")
            for i, ref in enumerate(kiln_tools.ort_run(path, feeds)):
                write_pb(os.path.join(d, f"output_{i}.pb"), ref)
        manifest.append({"name": name, "step": step})
        print(f"{name}: output step {step:.4g}")
    with open(os.path.join(stage, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    shutil.copy2(kiln_tools.find_tool("kiln-run"), os.path.join(stage, "kiln-run"))
    where = os.path.relpath(stage, ROOT) if stage.startswith(ROOT + os.sep) else stage
    print(f"prepared {where}: carry it, then run `python3 {os.path.relpath(__file__, ROOT)} "
          f"run {where}`")


def run(stage, chips=("", "sm_80")):
    """The GPU half: python3 and kiln-run only. Each chip: "" the image the
    runtime picks, else KILN_CUDA_CHIP."""
    with open(os.path.join(stage, "manifest.json")) as f:
        manifest = json.load(f)
    failed = 0
    for chip in chips:
        env = dict(os.environ)
        if chip:
            env["KILN_CUDA_CHIP"] = chip
        for m in manifest:
            for k in range(2):
                d = os.path.join(stage, f"{m['name']}_set{k}")
                # One step of the output's quantization, plus float32 rounding.
                atol = m["step"] * (1 + 1e-4)
                cmd = [os.path.join(stage, "kiln-run"), os.path.join(stage, m["name"] + ".so"),
                       "--input", os.path.join(d, "input_0.pb"), "--expect", os.path.join(d, "output_0.pb"),
                       "--rtol", "0", "--atol", repr(atol)]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
                ok = p.returncode == 0
                failed += not ok
                tail = (p.stdout + p.stderr).strip().splitlines()
                print(f"{chip or 'default'} {m['name']} set{k}: {'ok' if ok else 'FAIL'}"
                      f"{'' if ok else ': ' + ' | '.join(tail[-3:])}")
    print(f"{sum(2 * len(manifest) for _ in chips) - failed} passed, {failed} failed")
    return 1 if failed else 0


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("prepare", "run", "lit"):
        sys.exit(__doc__)
    cmd, stage = sys.argv[1], sys.argv[2]
    if cmd == "prepare":
        prepare(stage, sys.argv[3] if len(sys.argv) > 3 else "cuda")
    elif cmd == "run":
        sys.exit(run(stage))
    else:
        # lit: the cuda build's report (needs only kilnc), then the run half
        # on the CPU build.
        prepare(os.path.join(stage, "cuda"), "cuda")
        prepare(os.path.join(stage, "cpu"), "cpu")
        rc = run(os.path.join(stage, "cpu"), chips=("",))
        if rc == 0:
            print("PASS int8_gpu")
        sys.exit(rc)


if __name__ == "__main__":
    main()
