//===- InferShapesRecurrent.cpp - LSTM, GRU, RNN ---------------------------===//
//
// Shape inference of the recurrent ops (ONNX spec, latest opset). With
// layout 0, X is [seq, batch, input] and the outputs are Y [seq, dirs,
// batch, hidden], Y_h (and Y_c) [dirs, batch, hidden]; with layout 1, X is
// [batch, seq, input], Y [batch, seq, dirs, hidden], Y_h [batch, dirs,
// hidden]. An omitted output keeps its `none` type.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

using namespace mlir;
using namespace mlir::kiln::onnxops;

using InferredTypes = FailureOr<SmallVector<Type>>;

static constexpr int64_t kDynamic = ShapedType::kDynamic;

static bool staticMismatch(int64_t a, int64_t b) {
  return !ShapedType::isDynamic(a) && !ShapedType::isDynamic(b) && a != b;
}

/// Shared inference of LSTM (numGates 4), GRU (3) and RNN (1).
static InferredTypes inferRecurrent(Operation *op, int64_t numGates) {
  Value x = op->getOperand(0), w = op->getOperand(1), r = op->getOperand(2);
  auto direction = op->getAttrOfType<StringAttr>("direction");
  StringRef dir = direction ? direction.getValue() : "forward";
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return op->emitOpError() << "unknown direction '" << dir << "'";
  int64_t dirs = dir == "bidirectional" ? 2 : 1;
  int64_t layout = 0;
  if (auto a = op->getAttrOfType<IntegerAttr>("layout"))
    layout = a.getInt();
  if (layout != 0 && layout != 1)
    return op->emitOpError() << "layout must be 0 or 1, got " << layout;

  int64_t seq = kDynamic, batch = kDynamic, hidden = kDynamic;
  if (auto a = op->getAttrOfType<IntegerAttr>("hidden_size")) {
    hidden = a.getInt();
    if (hidden <= 0)
      return op->emitOpError()
             << "hidden_size must be positive, got " << hidden;
  }
  std::optional<ArrayRef<int64_t>> xs = getShapeOf(x);
  if (xs) {
    if (xs->size() != 3)
      return op->emitOpError() << "expects X of rank 3, got " << x.getType();
    seq = (*xs)[layout == 0 ? 0 : 1];
    batch = (*xs)[layout == 0 ? 1 : 0];
  }
  std::optional<ArrayRef<int64_t>> ws = getShapeOf(w), rs = getShapeOf(r);
  if (ws) {
    if (ws->size() != 3 || staticMismatch((*ws)[0], dirs))
      return op->emitOpError()
             << "expects W of shape [" << dirs << ", " << numGates
             << "*hidden_size, input_size], got " << w.getType();
    if (xs && staticMismatch((*ws)[2], (*xs)[2]))
      return op->emitOpError() << "W's input size " << (*ws)[2]
                               << " differs from X's " << (*xs)[2];
    if (!ShapedType::isDynamic((*ws)[1])) {
      if ((*ws)[1] % numGates != 0 ||
          staticMismatch((*ws)[1] / numGates, hidden))
        return op->emitOpError() << "W's dim 1 (" << (*ws)[1] << ") is not "
                                 << numGates << "*hidden_size";
      hidden = (*ws)[1] / numGates;
    }
  }
  if (rs) {
    if (rs->size() != 3 || staticMismatch((*rs)[0], dirs) ||
        staticMismatch((*rs)[2], hidden) ||
        (!ShapedType::isDynamic(hidden) &&
         staticMismatch((*rs)[1], numGates * hidden)))
      return op->emitOpError()
             << "expects R of shape [" << dirs << ", " << numGates
             << "*hidden_size, hidden_size], got " << r.getType();
    if (ShapedType::isDynamic(hidden))
      hidden = (*rs)[2];
  }
  if (!isNoValue(op->getOperand(3)))
    if (std::optional<ArrayRef<int64_t>> bs = getShapeOf(op->getOperand(3)))
      if (bs->size() != 2 || staticMismatch((*bs)[0], dirs) ||
          (!ShapedType::isDynamic(hidden) &&
           staticMismatch((*bs)[1], 2 * numGates * hidden)))
        return op->emitOpError()
               << "expects B of shape [" << dirs << ", " << 2 * numGates
               << "*hidden_size], got " << op->getOperand(3).getType();
  if (!isNoValue(op->getOperand(4)))
    if (std::optional<ArrayRef<int64_t>> ls = getShapeOf(op->getOperand(4)))
      if (ls->size() != 1 || staticMismatch((*ls)[0], batch))
        return op->emitOpError() << "expects sequence_lens of shape [batch], "
                                 << "got " << op->getOperand(4).getType();

  Type elemTy = getElementTypeOrSelf(x.getType());
  SmallVector<int64_t> yShape =
      layout == 0 ? SmallVector<int64_t>{seq, dirs, batch, hidden}
                  : SmallVector<int64_t>{batch, seq, dirs, hidden};
  SmallVector<int64_t> hShape = layout == 0
                                    ? SmallVector<int64_t>{dirs, batch, hidden}
                                    : SmallVector<int64_t>{batch, dirs, hidden};
  SmallVector<Type> types;
  for (auto [i, res] : llvm::enumerate(op->getResults())) {
    if (isa<NoneType>(res.getType()))
      types.push_back(res.getType());
    else
      types.push_back(RankedTensorType::get(i == 0 ? yShape : hShape, elemTy));
  }
  return types;
}

InferredTypes LSTMOp::inferResultTypes() {
  return inferRecurrent(getOperation(), 4);
}
InferredTypes GRUOp::inferResultTypes() {
  return inferRecurrent(getOperation(), 3);
}
InferredTypes RNNOp::inferResultTypes() {
  return inferRecurrent(getOperation(), 1);
}
