//===- InferShapes.td - ONNX shape inference interface -----*- tablegen -*-===//

#ifndef KILN_DIALECT_ONNX_IR_INFERSHAPES_TD
#define KILN_DIALECT_ONNX_IR_INFERSHAPES_TD

include "mlir/IR/OpBase.td"

def Onnx_InferShapesOpInterface : OpInterface<"InferShapesOpInterface"> {
  let cppNamespace = "::mlir::kiln::onnxops";
  let description = [{
    Shape inference for `onnx` ops. `inferShapes()` refines the op's result
    types in place from its operand types (and the values of constant
    operands, see OnnxUtils.h), following the ONNX specification of the
    latest opset. Dimensions it cannot infer stay dynamic (`?`); a result
    whose rank is unknown stays unranked. On inconsistent shapes it emits an
    error at the op (whose location names the ONNX node) and returns failure.
    It never makes a result type less precise than it was.
  }];
  let methods = [
    InterfaceMethod<
      /*desc=*/"Refines the result types in place from the operands.",
      /*retTy=*/"::mlir::LogicalResult",
      /*methodName=*/"inferShapes",
      /*args=*/(ins)>
  ];
}

#endif // KILN_DIALECT_ONNX_IR_INFERSHAPES_TD
