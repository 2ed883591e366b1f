//===- OnnxBase.td - ONNX dialect base definitions ---------*- tablegen -*-===//
//
// The `onnx` dialect: one op per ai.onnx operator (generated into OnnxOps.td
// by utils/gen_onnx_ops.py) plus the hand-written ops below.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_ONNX_IR_ONNXBASE_TD
#define KILN_DIALECT_ONNX_IR_ONNXBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/BuiltinTypes.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Onnx_Dialect : Dialect {
  let name = "onnx";
  let cppNamespace = "::mlir::kiln::onnxops";
  let summary = "ONNX operators (ai.onnx domain) as MLIR operations";
  let description = [{
    The `onnx` dialect holds one operation per operator of the ONNX standard
    domain (ai.onnx), latest opset version, generated from the ONNX operator
    schemas by `utils/gen_onnx_ops.py`. The ONNX importer normalizes older
    opsets to this form (for example `axes` as an input rather than an
    attribute), so passes see one form per op.

    * Operands and results keep the ONNX formal order. A missing optional
      input is a value of type `none` produced by `onnx.NoValue`, so operand
      positions never shift; the last formal input/output may be variadic.
    * Attributes keep their ONNX names; attributes with a schema default are
      default-valued.
    * GRAPH attributes (If, Loop, Scan, SequenceMap) are single-block regions
      terminated by `onnx.Yield`.
    * Shape inference: ops implementing `InferShapesOpInterface` refine their
      result types from operand types and constant operand values
      (`--kiln-onnx-infer-shapes`).
  }];
  let dependentDialects = [
    "::mlir::func::FuncDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

class Onnx_Op<string mnemonic, list<Trait> traits = []>
    : Op<Onnx_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Hand-written ops
//===----------------------------------------------------------------------===//

def Onnx_NoValueOp : Onnx_Op<"NoValue", [Pure]> {
  let summary = "Placeholder for a missing optional input or output";
  let description = [{
    Produces the value of type `none` that stands for an ONNX optional input
    left empty, so the other operands keep their ONNX positions.

    Example:

    ```mlir
    %none = onnx.NoValue
    %y = "onnx.Conv"(%x, %w, %none) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, none) -> tensor<1x4x6x6xf32>
    ```
  }];
  let results = (outs NoneType:$none);
  let assemblyFormat = "attr-dict";
}

def Onnx_YieldOp : Onnx_Op<"Yield", [Pure, ReturnLike, Terminator]> {
  let summary = "Terminator of the regions of If, Loop, Scan and SequenceMap";
  let description = [{
    Returns the outputs of an ONNX subgraph (a GRAPH attribute turned into a
    region) to the op that owns the region.

    Example:

    ```mlir
    onnx.Yield %a, %b : tensor<2xf32>, tensor<i1>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$results_out);
  let assemblyFormat = "attr-dict ($results_out^ `:` type($results_out))?";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

#endif // KILN_DIALECT_ONNX_IR_ONNXBASE_TD
