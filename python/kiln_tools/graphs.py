"""Small ONNX models for tests, built from (name, element type, shape)."""
from onnx import helper


def make_model(name, nodes, inputs, outputs, inits=(), opset=17, ir_version=8):
    """A model of one graph. inputs, outputs: (name, elem_type, shape) or
    (name, elem_type) (shape unknown); inits: TensorProtos."""
    def vi(t):
        return helper.make_tensor_value_info(t[0], t[1], t[2] if len(t) > 2 else None)

    g = helper.make_graph(nodes, name, [vi(t) for t in inputs], [vi(t) for t in outputs],
                          list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=ir_version)
