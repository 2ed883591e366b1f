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

// The ops with shape inference: those marked Infer in OnnxFamilies.def,
// whose inferResultTypes() lives in InferShapes<Family>.cpp. Keep the list in
// sync with INFER_SHAPES_OPS in utils/gen_onnx_ops.py (which declares the
// interface method).
#define KILN_ONNX_INFER_Infer(OP) KILN_ONNX_INFER_SHAPES(OP##Op)
#define KILN_ONNX_INFER_NoInfer(OP)
#define KILN_ONNX_OP(FAMILY, OP, INFER) KILN_ONNX_INFER_##INFER(OP)
#include "kiln/Dialect/Onnx/IR/OnnxFamilies.def"
#undef KILN_ONNX_INFER_Infer
#undef KILN_ONNX_INFER_NoInfer
