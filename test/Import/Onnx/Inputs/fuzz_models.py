"""Builds the valid seed model the importer fuzz test mutates: it exercises
initializers (inline and blob), attributes of each kind, a Constant node,
optional inputs, an If subgraph and symbolic dims."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def seed_model():
    then_g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"], name="then_relu")], "then", [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, ["N", 4])])
    else_g = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["e"], name="else_neg")], "else", [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 4])])
    nodes = [
        helper.make_node("Constant", [], ["c"], name="const",
                         value=numpy_helper.from_array(np.array([1.5, 2.5, 3.5, 4.5], np.float32))),
        helper.make_node("Add", ["x", "c"], ["a"], name="add"),
        helper.make_node("MatMul", ["a", "w"], ["m"], name="mm"),
        helper.make_node("Transpose", ["m"], ["tr"], name="tr", perm=[1, 0]),
        helper.make_node("Clip", ["tr", "", "hi"], ["cl"], name="clip"),
        helper.make_node("Softmax", ["cl"], ["sm"], name="sm", axis=0),
        helper.make_node("ReduceSum", ["sm", "axes"], ["rs"], name="rs", keepdims=1),
        helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g),
        helper.make_node("Concat", ["y", "y"], ["cc"], name="concat", axis=1),
        helper.make_node("Cast", ["cc"], ["out"], to=TensorProto.FLOAT),
        helper.make_node("LeakyRelu", ["out"], ["lr"], alpha=0.25),
    ]
    inits = [
        numpy_helper.from_array(np.arange(32, dtype=np.float32).reshape(4, 8), "w"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
        numpy_helper.from_array(np.array([0], np.int64), "axes"),
    ]
    g = helper.make_graph(
        nodes, "seed",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("rs", TensorProto.FLOAT, [1, "N"]),
         helper.make_tensor_value_info("lr", TensorProto.FLOAT, ["N", 8])],
        inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
