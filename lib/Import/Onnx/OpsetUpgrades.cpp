//===- OpsetUpgrades.cpp - Older opsets to the latest schema -----------------===//
//
// The importer normalizes each node to the form of the latest schema (the one
// the dialect defines): axes and other attributes that became inputs, Slice
// and Clip attributes, dropped attributes, and opset < 13 Softmax.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnx_import;

namespace {

/// Removes attribute `name` from `attrs`, returning it.
static Attribute takeAttr(SmallVectorImpl<NamedAttribute> &attrs,
                          StringRef name) {
  for (auto *it = attrs.begin(); it != attrs.end(); ++it)
    if (it->getName() == name) {
      Attribute a = it->getValue();
      attrs.erase(it);
      return a;
    }
  return {};
}

/// The integers of an INTS (or INT) attribute; failure for other kinds.
static FailureOr<SmallVector<int64_t>> toI64s(Attribute a) {
  SmallVector<int64_t> v;
  if (auto i = dyn_cast<IntegerAttr>(a)) {
    v.push_back(i.getInt());
    return v;
  }
  auto array = dyn_cast<ArrayAttr>(a);
  if (!array)
    return failure();
  for (Attribute e : array) {
    auto i = dyn_cast<IntegerAttr>(e);
    if (!i)
      return failure();
    v.push_back(i.getInt());
  }
  return v;
}

} // namespace

/// Rewrites older-opset forms into the form of the latest schema, which is
/// what the dialect defines.
LogicalResult Importer::normalize(const onnx::NodeProto &node, Location loc,
                                  SmallVectorImpl<Value> &operands,
                                  SmallVectorImpl<NamedAttribute> &attrs) {
  StringRef op = node.op_type();
  auto setInput = [&](unsigned i, Value v) {
    while (operands.size() < i)
      operands.push_back(noValue(loc));
    if (operands.size() == i)
      operands.push_back(v);
    else
      operands[i] = v;
  };
  // `axes` moved from attribute to input.
  bool axesToInput =
      ((op == "Squeeze" || op == "Unsqueeze" || op == "ReduceSum") &&
       opset < 13) ||
      ((op == "ReduceMean" || op == "ReduceMax" || op == "ReduceMin" ||
        op == "ReduceProd" || op == "ReduceL1" || op == "ReduceL2" ||
        op == "ReduceLogSum" || op == "ReduceLogSumExp" ||
        op == "ReduceSumSquare") &&
       opset < 18);
  // Moves integer-list attribute `name` to input `index` as a constant.
  auto attrToInput = [&](StringRef name, unsigned index,
                         bool required) -> LogicalResult {
    Attribute a = takeAttr(attrs, name);
    if (!a) {
      if (required)
        return nodeError(node, loc) << "needs attribute '" << name << "'";
      return success();
    }
    FailureOr<SmallVector<int64_t>> values = toI64s(a);
    if (failed(values))
      return nodeError(node, loc)
             << "attribute '" << name << "' must be a list of integers";
    if (operands.size() > index && !isa<NoneType>(operands[index].getType()))
      return nodeError(node, loc)
             << "has both attribute '" << name << "' and input " << index;
    setInput(index, i64Constant(*values, loc));
    return success();
  };
  if (axesToInput && failed(attrToInput("axes", 1, /*required=*/false)))
    return failure();
  if (op == "Slice" && opset < 10) {
    if (operands.size() != 1)
      return nodeError(node, loc) << "takes one input before opset 10";
    if (failed(attrToInput("starts", 1, true)) ||
        failed(attrToInput("ends", 2, true)) ||
        failed(attrToInput("axes", 3, false)))
      return failure();
  }
  if (op == "Clip" && opset < 11) {
    if (operands.size() != 1)
      return nodeError(node, loc) << "takes one input before opset 11";
    Type elem = elementTypeOf(operands[0]);
    if (!elem || !isa<FloatType>(elem))
      return nodeError(node, loc)
             << "input must be a floating-point tensor before opset 11";
    for (auto [name, index] : {std::pair<StringRef, unsigned>("min", 1),
                               std::pair<StringRef, unsigned>("max", 2)}) {
      Attribute a = takeAttr(attrs, name);
      if (!a)
        continue;
      auto f = dyn_cast<FloatAttr>(a);
      if (!f)
        return nodeError(node, loc)
               << "attribute '" << name << "' must be a float";
      APFloat v(f.getValueAsDouble());
      bool lost = false;
      v.convert(cast<FloatType>(elem).getFloatSemantics(),
                APFloat::rmNearestTiesToEven, &lost);
      setInput(index,
               arith::ConstantOp::create(
                   builder, loc,
                   DenseElementsAttr::get(RankedTensorType::get({}, elem), v)));
    }
  }
  if (op == "BatchNormalization") {
    takeAttr(attrs, "spatial");
    takeAttr(attrs, "is_test");
    takeAttr(attrs, "consumed_inputs");
  }
  if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && opset < 7) {
    if (takeAttr(attrs, "broadcast") || takeAttr(attrs, "axis"))
      return nodeError(node, loc)
             << "legacy broadcast attributes (opset < 7) are not supported";
    takeAttr(attrs, "consumed_inputs");
  }
  if (op == "Gemm" && opset < 7)
    takeAttr(attrs, "broadcast");
  return success();
}

LogicalResult
Importer::importLegacySoftmax(const onnx::NodeProto &node, Location loc,
                              Value input,
                              SmallVectorImpl<NamedAttribute> &attrs) {
  // Before opset 13, Softmax, LogSoftmax and Hardmax flatten the input to 2-D
  // at `axis` (default 1) and normalize each row. Over the last dim that is
  // the opset-13 op; otherwise: Flatten -> op(axis = -1) -> Reshape back.
  int64_t axis = 1;
  if (Attribute a = takeAttr(attrs, "axis")) {
    auto ia = dyn_cast<IntegerAttr>(a);
    if (!ia)
      return nodeError(node, loc) << "attribute 'axis' must be an integer";
    axis = ia.getInt();
  }
  std::string opName = "onnx." + node.op_type();
  Type elem = elementTypeOf(input);
  if (!elem)
    return nodeError(node, loc) << "input must be a tensor";
  auto ranked = dyn_cast<RankedTensorType>(input.getType());
  if (ranked) {
    int64_t rank = ranked.getRank();
    if (axis < -rank || axis > rank || (rank == 0 && axis != 0))
      return nodeError(node, loc)
             << "axis " << axis << " is out of range for rank " << rank;
    if (axis < 0)
      axis += rank;
  }
  auto axisAttr = [&](int64_t v) {
    return builder.getNamedAttr("axis", builder.getI64IntegerAttr(v));
  };
  SmallVector<NamedAttribute> opAttrs(attrs.begin(), attrs.end());
  opAttrs.push_back(axisAttr(-1));
  Value result;
  if (ranked && (axis == ranked.getRank() - 1 ||
                 (axis == ranked.getRank() && ranked.getRank() == 0))) {
    // The result has the input's shape; the op may lack shape inference.
    FailureOr<Value> v =
        buildSimpleOp(opName, {input}, opAttrs, input.getType(), loc);
    if (failed(v))
      return failure();
    result = *v;
  } else {
    FailureOr<Value> flat =
        buildSimpleOp("onnx.Flatten", {input}, {axisAttr(axis)}, elem, loc);
    if (failed(flat))
      return failure();
    FailureOr<Value> norm =
        buildSimpleOp(opName, {*flat}, opAttrs, flat->getType(), loc);
    if (failed(norm))
      return failure();
    FailureOr<Value> shape =
        buildSimpleOp("onnx.Shape", {input}, {}, builder.getI64Type(), loc);
    if (failed(shape))
      return failure();
    FailureOr<Value> back = buildSimpleOp(
        "onnx.Reshape", {*norm, *shape},
        // Zeros in the shape are dims of size 0, not copies.
        {builder.getNamedAttr("allowzero", builder.getI64IntegerAttr(1))},
        input.getType(), loc);
    if (failed(back))
      return failure();
    result = *back;
  }
  if (node.output_size() > 0 && !node.output(0).empty())
    scopes.back()[node.output(0)] = result;
  return success();
}
