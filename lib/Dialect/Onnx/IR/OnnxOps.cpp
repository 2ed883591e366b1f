//===- OnnxOps.cpp - Operations of the onnx dialect -----------------------===//
//
// Hand-written parts of the ops: verifiers and the shape-inference entry
// points. The op definitions themselves are generated (OnnxOps.td, compiled
// in shards); each op's inferResultTypes() lives in InferShapes<Family>.cpp.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"

#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

#include "kiln/Dialect/Onnx/IR/InferShapes.cpp.inc"

// Ops whose verifier is their shape inference run without changing anything:
// the declared result types must agree with what the operands imply.
#define KILN_ONNX_VERIFY_BY_INFERENCE(OP)                                      \
  LogicalResult OP::verify() {                                                 \
    return verifyInferredResultTypes(*this, inferResultTypes());               \
  }

// Ops of utils/gen_onnx_ops.py's INFER_SHAPES_OPS.
#define KILN_ONNX_INFER_SHAPES(OP)                                             \
  LogicalResult OP::inferShapes() {                                            \
    return applyInferredResultTypes(*this, inferResultTypes());                \
  }

// Keep in sync with VERIFIER_OPS in utils/gen_onnx_ops.py.
KILN_ONNX_VERIFY_BY_INFERENCE(AddOp)
KILN_ONNX_VERIFY_BY_INFERENCE(AveragePoolOp)
KILN_ONNX_VERIFY_BY_INFERENCE(BatchNormalizationOp)
KILN_ONNX_VERIFY_BY_INFERENCE(CastOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ClipOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ConcatOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ConvOp)
KILN_ONNX_VERIFY_BY_INFERENCE(DivOp)
KILN_ONNX_VERIFY_BY_INFERENCE(FlattenOp)
KILN_ONNX_VERIFY_BY_INFERENCE(GatherOp)
KILN_ONNX_VERIFY_BY_INFERENCE(GemmOp)
KILN_ONNX_VERIFY_BY_INFERENCE(GlobalAveragePoolOp)
KILN_ONNX_VERIFY_BY_INFERENCE(MatMulOp)
KILN_ONNX_VERIFY_BY_INFERENCE(MaxPoolOp)
KILN_ONNX_VERIFY_BY_INFERENCE(MulOp)
KILN_ONNX_VERIFY_BY_INFERENCE(PowOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ReduceMeanOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ReduceSumOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ReshapeOp)
KILN_ONNX_VERIFY_BY_INFERENCE(ShapeOp)
KILN_ONNX_VERIFY_BY_INFERENCE(SliceOp)
KILN_ONNX_VERIFY_BY_INFERENCE(SoftmaxOp)
KILN_ONNX_VERIFY_BY_INFERENCE(SqueezeOp)
KILN_ONNX_VERIFY_BY_INFERENCE(SubOp)
KILN_ONNX_VERIFY_BY_INFERENCE(TransposeOp)
KILN_ONNX_VERIFY_BY_INFERENCE(UnsqueezeOp)

// Keep in sync with INFER_SHAPES_OPS in utils/gen_onnx_ops.py.
KILN_ONNX_INFER_SHAPES(AbsOp)
KILN_ONNX_INFER_SHAPES(AddOp)
KILN_ONNX_INFER_SHAPES(AveragePoolOp)
KILN_ONNX_INFER_SHAPES(BatchNormalizationOp)
KILN_ONNX_INFER_SHAPES(CastOp)
KILN_ONNX_INFER_SHAPES(ClipOp)
KILN_ONNX_INFER_SHAPES(ConcatOp)
KILN_ONNX_INFER_SHAPES(ConvOp)
KILN_ONNX_INFER_SHAPES(DivOp)
KILN_ONNX_INFER_SHAPES(ExpOp)
KILN_ONNX_INFER_SHAPES(FlattenOp)
KILN_ONNX_INFER_SHAPES(GatherOp)
KILN_ONNX_INFER_SHAPES(GemmOp)
KILN_ONNX_INFER_SHAPES(GlobalAveragePoolOp)
KILN_ONNX_INFER_SHAPES(HardSigmoidOp)
KILN_ONNX_INFER_SHAPES(IdentityOp)
KILN_ONNX_INFER_SHAPES(LeakyReluOp)
KILN_ONNX_INFER_SHAPES(LogOp)
KILN_ONNX_INFER_SHAPES(MatMulOp)
KILN_ONNX_INFER_SHAPES(MaxPoolOp)
KILN_ONNX_INFER_SHAPES(MulOp)
KILN_ONNX_INFER_SHAPES(NegOp)
KILN_ONNX_INFER_SHAPES(PowOp)
KILN_ONNX_INFER_SHAPES(ReduceMeanOp)
KILN_ONNX_INFER_SHAPES(ReduceSumOp)
KILN_ONNX_INFER_SHAPES(ReluOp)
KILN_ONNX_INFER_SHAPES(ReshapeOp)
KILN_ONNX_INFER_SHAPES(ShapeOp)
KILN_ONNX_INFER_SHAPES(SigmoidOp)
KILN_ONNX_INFER_SHAPES(SliceOp)
KILN_ONNX_INFER_SHAPES(SoftmaxOp)
KILN_ONNX_INFER_SHAPES(SqrtOp)
KILN_ONNX_INFER_SHAPES(SqueezeOp)
KILN_ONNX_INFER_SHAPES(SubOp)
KILN_ONNX_INFER_SHAPES(TanhOp)
KILN_ONNX_INFER_SHAPES(TransposeOp)
KILN_ONNX_INFER_SHAPES(UnsqueezeOp)
