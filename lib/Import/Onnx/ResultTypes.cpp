//===- ResultTypes.cpp - The result types of imported ops -----------------===//
//
// Each op the importer creates is verified and its shapes inferred from its
// operands (finishOp); the types the model declares for its results are
// hints merged in afterwards, as onnxruntime takes them (a contradiction is a
// warning and the inferred shape wins). If and Loop results take their
// branches' and body's types (refineControlFlowResults), an If whose
// condition is computed from shapes its taken branch's.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/Dialect/Onnx/IR/ShapeValues.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnx_import;

std::string Importer::nodeLabel(Operation *op) const {
  StringRef type = op->getName().getStringRef();
  type.consume_front("onnx.");
  std::string name;
  if (auto loc = dyn_cast<NameLoc>(op->getLoc()))
    name = loc.getName().str();
  return ("node '" + name + "' (" + type + ", opset " + Twine(opset) + ")")
      .str();
}

LogicalResult Importer::finishOp(Operation *op) {
  // Verifier and shape-inference errors are re-emitted naming the node (name,
  // op type, opset) instead of "'onnx.X' op ...".
  std::string message;
  LogicalResult result = success();
  // The types the model declares for the results (value_info) are hints:
  // inference runs from the operands alone, then adopts what the hint adds.
  // A hint that contradicts the inferred shape (a rank-0 declaration of a
  // [1] value, a stale value_info) is a warning and the inferred shape wins,
  // as in onnxruntime; a different element type stays an error.
  SmallVector<Type> hints;
  if (isa<onnxops::InferShapesOpInterface>(op))
    for (OpResult r : op->getResults()) {
      hints.push_back(r.getType());
      if (auto rt = dyn_cast<RankedTensorType>(r.getType()))
        r.setType(UnrankedTensorType::get(rt.getElementType()));
    }
  {
    ScopedDiagnosticHandler capture(ctx, [&](Diagnostic &d) {
      if (d.getSeverity() != DiagnosticSeverity::Error)
        return failure();
      if (message.empty())
        message = d.str();
      return success();
    });
    // Shape inference and later passes assume verified ops: check this one
    // (operand counts, attribute kinds) before inferring anything from it.
    result = verify(op, /*verifyRecursively=*/false);
    if (succeeded(result))
      if (auto infer = dyn_cast<onnxops::InferShapesOpInterface>(op))
        result = infer.inferShapes();
  }
  Location loc = op->getLoc();
  if (succeeded(result)) {
    for (auto [i, hint] : llvm::enumerate(hints)) {
      OpResult r = op->getResult(i);
      FailureOr<Type> merged = onnxops::refineType(r.getType(), hint);
      if (succeeded(merged)) {
        r.setType(*merged);
        continue;
      }
      // (A different element type failed inference above.)
      emitWarning(loc) << nodeLabel(op) << ": output " << i
                       << " is declared as " << hint << " but computes "
                       << r.getType() << "; the computed shape is used";
    }
    return success();
  }
  StringRef msg = message;
  std::string prefix = ("'" + op->getName().getStringRef() + "' op ").str();
  msg.consume_front(prefix);
  return emitError(loc) << nodeLabel(op) << ": " << msg, failure();
}

void Importer::refineControlFlowResults(
    Operation *op, ArrayRef<SmallVector<Type>> yieldTypes) {
  auto unknownResult = [&](unsigned i) {
    return i < op->getNumResults() &&
           isa<UnrankedTensorType>(op->getResult(i).getType());
  };
  if (isa<onnxops::IfOp>(op) && yieldTypes.size() == 2) {
    // A condition computed from shapes alone picks its branch now.
    if (std::optional<bool> c = onnxops::evaluateCondition(op->getOperand(0))) {
      op->setAttr(onnxops::kTakenBranchAttr,
                  builder.getI64IntegerAttr(*c ? 0 : 1));
      ArrayRef<Type> taken = yieldTypes[*c ? 0 : 1];
      for (unsigned i = 0; i < op->getNumResults() && i < taken.size(); ++i)
        if (unknownResult(i))
          op->getResult(i).setType(taken[i]);
      return;
    }
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      if (!unknownResult(i) || i >= yieldTypes[0].size() ||
          i >= yieldTypes[1].size())
        continue;
      Type a = yieldTypes[0][i], b = yieldTypes[1][i];
      if (a == b)
        op->getResult(i).setType(a);
      else if (std::optional<int64_t> axis =
                   op->getNumResults() == 1
                       ? onnxops::matchSqueezeIfSizeOne(cast<onnxops::IfOp>(op))
                       : std::nullopt) {
        // torch's squeeze(dim) export: the traced input had size 1 there,
        // so the squeezed branch's type; the lowering checks it at run time.
        op->getResult(i).setType(a);
        op->setAttr(onnxops::kSqueezeIfAttr, builder.getI64IntegerAttr(*axis));
      } else if (Type e = getElementTypeOrSelf(a); e == getElementTypeOrSelf(b))
        op->getResult(i).setType(UnrankedTensorType::get(e));
    }
  } else if (isa<onnxops::LoopOp>(op) && yieldTypes.size() == 1) {
    // Body yields (cond, carried..., scan...); the results are
    // (carried..., scan outputs stacked along a new leading dim).
    int64_t numCarried = static_cast<int64_t>(op->getNumOperands()) - 2;
    ArrayRef<Type> body = yieldTypes[0];
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      if (!unknownResult(i) || i + 1 >= body.size())
        continue;
      Type t = body[i + 1];
      if (static_cast<int64_t>(i) < numCarried)
        op->getResult(i).setType(t);
      else if (auto st = dyn_cast<ShapedType>(t))
        op->getResult(i).setType(UnrankedTensorType::get(st.getElementType()));
    }
  }
}
