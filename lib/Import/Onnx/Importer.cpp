//===- Importer.cpp - ONNX ModelProto to the onnx dialect -----------------===//
//
// Compiled with -fexceptions: protobuf's generated code may throw, and every
// exception is caught at this boundary and turned into a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "ImporterImpl.h"

#include "kiln/Runtime/RegularFile.h"

#include "llvm/ADT/ScopeExit.h"

#include <exception>

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnx_import;

//===----------------------------------------------------------------------===//
// Schema tables
//===----------------------------------------------------------------------===//

const llvm::StringMap<OpSchemaInfo> &onnx_import::getSchemaTable() {
  static const llvm::StringMap<OpSchemaInfo> table = [] {
    llvm::StringMap<OpSchemaInfo> t;
#define KILN_ONNX_OP(NAME, SINCE, NIN, INVAR, NOUT, OUTVAR, NREG)              \
  t[NAME] = OpSchemaInfo{SINCE, NIN, INVAR, NOUT, OUTVAR, NREG};
#include "kiln/Dialect/Onnx/IR/OnnxSchema.inc"
#undef KILN_ONNX_OP
    return t;
  }();
  return table;
}

const llvm::StringMap<SmallVector<std::string, 2>> &
onnx_import::getRegionTable() {
  static const llvm::StringMap<SmallVector<std::string, 2>> table = [] {
    llvm::StringMap<SmallVector<std::string, 2>> t;
#define KILN_ONNX_REGION(NAME, INDEX, ATTR) t[NAME].push_back(ATTR);
#include "kiln/Dialect/Onnx/IR/OnnxSchema.inc"
#undef KILN_ONNX_REGION
    return t;
  }();
  return table;
}
//===----------------------------------------------------------------------===//
// Nodes
//===----------------------------------------------------------------------===//

Value Importer::lookup(const std::string &name) const {
  for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
    auto found = it->find(name);
    if (found != it->end())
      return found->second;
  }
  return {};
}

Value Importer::noValue(Location loc) {
  return onnxops::NoValueOp::create(builder, loc, builder.getNoneType())
      .getResult();
}

Value Importer::i64Constant(ArrayRef<int64_t> values, Location loc) {
  auto type = RankedTensorType::get({static_cast<int64_t>(values.size())},
                                    builder.getI64Type());
  return arith::ConstantOp::create(builder, loc,
                                   DenseElementsAttr::get(type, values));
}

Location Importer::nodeLoc(const onnx::NodeProto &node, int64_t index) {
  std::string name = node.name();
  if (name.empty())
    name = node.op_type() + "_" + std::to_string(index);
  return NameLoc::get(builder.getStringAttr(name),
                      FileLineColLoc::get(ctx, sourceName, 0, 0));
}

InFlightDiagnostic Importer::nodeError(const onnx::NodeProto &node,
                                       Location loc) {
  std::string name = node.name();
  if (auto nameLoc = dyn_cast<NameLoc>(loc))
    name = nameLoc.getName().str();
  return emitError(loc) << "node '" << name << "' (" << node.op_type()
                        << ", opset " << opset << "): ";
}

LogicalResult Importer::importConstantNode(const onnx::NodeProto &node,
                                           Location loc) {
  if (node.attribute_size() != 1 || node.output_size() != 1)
    return nodeError(node, loc) << "expects exactly one value attribute";
  const auto &a = node.attribute(0);
  TypedAttr value;
  if (a.name() == "value") {
    FailureOr<ElementsAttr> t = convertTensor(a.t(), loc);
    if (failed(t))
      return failure();
    value = cast<TypedAttr>(*t);
  } else if (a.name() == "value_float") {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getF32Type()), a.f());
  } else if (a.name() == "value_floats") {
    SmallVector<float> v(a.floats().begin(), a.floats().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, builder.getF32Type()),
        ArrayRef<float>(v));
  } else if (a.name() == "value_int") {
    value = DenseElementsAttr::get(
        RankedTensorType::get({}, builder.getI64Type()), a.i());
  } else if (a.name() == "value_ints") {
    SmallVector<int64_t> v(a.ints().begin(), a.ints().end());
    value = DenseElementsAttr::get(
        RankedTensorType::get({(int64_t)v.size()}, builder.getI64Type()),
        ArrayRef<int64_t>(v));
  } else {
    return nodeError(node, loc)
           << "unsupported constant attribute '" << a.name() << "'";
  }
  scopes.back()[node.output(0)] =
      arith::ConstantOp::create(builder, loc, value).getResult();
  return success();
}

FailureOr<Operation *> Importer::buildOp(StringRef opName, ValueRange operands,
                                         ArrayRef<NamedAttribute> attrs,
                                         ArrayRef<Type> resultTypes,
                                         unsigned numRegions, Location loc) {
  OperationState state(loc, opName);
  state.addOperands(operands);
  state.addAttributes(attrs);
  state.addTypes(resultTypes);
  for (unsigned i = 0; i < numRegions; ++i)
    state.addRegion();
  Operation *op = builder.create(state);
  // An attribute of the wrong kind for the op (an INT where the schema has a
  // FLOAT, say) is dropped when stored as a property; say so instead of
  // leaving the op without it.
  for (const NamedAttribute &a : attrs) {
    std::optional<Attribute> stored = op->getInherentAttr(a.getName());
    if (stored && !*stored)
      return op->emitError()
                 << "node '"
                 << (isa<NameLoc>(loc) ? cast<NameLoc>(loc).getName().str()
                                       : std::string())
                 << "' (" << opName.drop_front(5) << ", opset " << opset
                 << "): attribute '" << a.getName().getValue()
                 << "' has the wrong kind: " << a.getValue(),
             failure();
  }
  return op;
}

FailureOr<Value> Importer::buildSimpleOp(StringRef opName, ValueRange operands,
                                         ArrayRef<NamedAttribute> attrs,
                                         Type resultType, Location loc) {
  if (!isa<TensorType>(resultType))
    resultType = UnrankedTensorType::get(resultType);
  FailureOr<Operation *> op =
      buildOp(opName, operands, attrs, {resultType}, 0, loc);
  if (failed(op) || failed(finishOp(*op)))
    return failure();
  return (*op)->getResult(0);
}

LogicalResult Importer::importNode(const onnx::NodeProto &node, int64_t index) {
  Location loc = nodeLoc(node, index);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node, loc)
           << "operator '" << node.op_type() << "' of domain '" << node.domain()
           << "' is not supported";
  if (node.op_type() == "Constant")
    return importConstantNode(node, loc);
  // Deprecated operators with a current equivalent: Scatter (opset 9-10)
  // is ScatterElements; Upsample (opset 7-9) is Resize with asymmetric
  // coordinates (and floor rounding for nearest).
  if (node.op_type() == "Scatter") {
    onnx::NodeProto renamed = node;
    renamed.set_op_type("ScatterElements");
    renamed.set_name(node.name().empty() ? "Scatter_" + std::to_string(index)
                                         : node.name());
    return importNode(renamed, index);
  }
  if (node.op_type() == "Upsample") {
    onnx::NodeProto resize;
    resize.set_op_type("Resize");
    resize.set_name(node.name().empty() ? "Upsample_" + std::to_string(index)
                                        : node.name());
    for (const std::string &out : node.output())
      resize.add_output(out);
    if (node.input_size() < 1)
      return nodeError(node, loc) << "needs input X";
    resize.add_input(node.input(0));
    resize.add_input(""); // roi
    std::string mode = "nearest";
    for (const auto &a : node.attribute()) {
      if (a.name() == "mode") {
        mode = a.s();
      } else if (a.name() == "scales") { // opset 7: an attribute
        SmallVector<float> v(a.floats().begin(), a.floats().end());
        std::string name = resize.name() + "__scales";
        scopes.back()[name] =
            arith::ConstantOp::create(
                builder, loc,
                DenseElementsAttr::get(
                    RankedTensorType::get({(int64_t)v.size()},
                                          builder.getF32Type()),
                    ArrayRef<float>(v)))
                .getResult();
        resize.add_input(name);
      }
    }
    if (node.input_size() > 1)
      resize.add_input(node.input(1));
    if (resize.input_size() != 3)
      return nodeError(node, loc) << "needs scales (an input or attribute)";
    auto addStr = [&](StringRef name, StringRef value) {
      onnx::AttributeProto *a = resize.add_attribute();
      a->set_name(name.str());
      a->set_type(onnx::AttributeProto::STRING);
      a->set_s(value.str());
    };
    addStr("mode", mode);
    addStr("coordinate_transformation_mode", "asymmetric");
    if (mode == "nearest")
      addStr("nearest_mode", "floor");
    return importNode(resize, index);
  }

  std::string opName = "onnx." + node.op_type();
  auto registered = RegisteredOperationName::lookup(opName, ctx);
  const auto &table = getSchemaTable();
  auto schemaIt = table.find(node.op_type());
  if (!registered || schemaIt == table.end())
    return nodeError(node, loc)
           << "unknown ONNX operator '" << node.op_type() << "'";
  const OpSchemaInfo &schema = schemaIt->second;

  SmallVector<Value> operands;
  for (const std::string &in : node.input()) {
    if (in.empty()) {
      operands.push_back(noValue(loc));
      continue;
    }
    Value v = lookup(in);
    if (!v)
      return nodeError(node, loc)
             << "input '" << in << "' is not defined before its use";
    operands.push_back(v);
  }
  SmallVector<NamedAttribute> attrs;
  llvm::StringSet<> attrNames;
  const auto &regionNames = getRegionTable();
  auto regionIt = regionNames.find(node.op_type());
  SmallVector<const onnx::GraphProto *> regionGraphs(schema.numRegions,
                                                     nullptr);
  for (const auto &a : node.attribute()) {
    if (a.name().empty())
      return nodeError(node, loc) << "has an attribute without a name";
    if (!attrNames.insert(a.name()).second)
      return nodeError(node, loc)
             << "has attribute '" << a.name() << "' more than once";
    if (a.type() == onnx::AttributeProto::GRAPH) {
      bool placed = false;
      if (regionIt != regionNames.end())
        for (auto [i, n] : llvm::enumerate(regionIt->second))
          if (n == a.name() && i < regionGraphs.size()) {
            regionGraphs[i] = &a.g();
            placed = true;
          }
      if (!placed)
        return nodeError(node, loc)
               << "unexpected graph attribute '" << a.name() << "'";
      continue;
    }
    FailureOr<NamedAttribute> na = convertAttribute(a, loc);
    if (failed(na))
      return failure();
    attrs.push_back(*na);
  }
  for (auto [i, g] : llvm::enumerate(regionGraphs))
    if (!g)
      return nodeError(node, loc) << "is missing its graph attribute '"
                                  << regionIt->second[i] << "'";
  if (failed(normalize(node, loc, operands, attrs)))
    return failure();

  StringRef opType = node.op_type();
  if ((opType == "Softmax" || opType == "LogSoftmax" || opType == "Hardmax") &&
      opset < 13) {
    if (operands.size() != 1 || node.output_size() != 1)
      return nodeError(node, loc) << "expects one input and one output";
    return importLegacySoftmax(node, loc, operands[0], attrs);
  }

  // Pad omitted trailing optional inputs.
  int fixedInputs = schema.numInputs - (schema.lastInputVariadic ? 1 : 0);
  while (static_cast<int>(operands.size()) < fixedInputs)
    operands.push_back(noValue(loc));
  if (!schema.lastInputVariadic &&
      static_cast<int>(operands.size()) > schema.numInputs)
    return nodeError(node, loc)
           << "has " << operands.size()
           << " inputs, the operator takes at most " << schema.numInputs;

  int numResults = node.output_size();
  int fixedOutputs = schema.numOutputs - (schema.lastOutputVariadic ? 1 : 0);
  if (!schema.lastOutputVariadic && numResults > schema.numOutputs)
    return nodeError(node, loc)
           << "has " << numResults << " outputs, the operator has at most "
           << schema.numOutputs;
  numResults = std::max(numResults, fixedOutputs);

  // Initial result types: refined by shape inference below (or, for If and
  // Loop, taken from the subgraphs' outputs); otherwise the type the graph
  // declares for the value (value_info, graph outputs); otherwise an
  // unranked tensor of the first input's element type.
  Type defaultElem = builder.getF32Type();
  for (Value v : operands)
    if (Type e = elementTypeOf(v)) {
      defaultElem = e;
      break;
    }
  // Ops whose result element type does not follow their first input.
  if (node.op_type() == "Shape" || node.op_type() == "Size")
    defaultElem = builder.getI64Type();
  if (node.op_type() == "Cast")
    for (const auto &a : node.attribute())
      if (a.name() == "to")
        if (Type t = onnxops::getElementTypeForOnnxDataType(ctx, a.i()))
          defaultElem = t;
  auto operandElem = [&](unsigned i) -> Type {
    return i < operands.size() ? elementTypeOf(operands[i]) : Type();
  };
  if (llvm::is_contained({"Equal", "Less", "Greater", "LessOrEqual",
                          "GreaterOrEqual", "And", "Or", "Xor", "Not", "IsNaN",
                          "IsInf"},
                         node.op_type()))
    defaultElem = builder.getI1Type();
  else if (node.op_type() == "Where" || node.op_type() == "CastLike")
    defaultElem = operandElem(1) ? operandElem(1) : defaultElem;
  else if (node.op_type() == "OneHot")
    defaultElem = operandElem(2) ? operandElem(2) : defaultElem;
  else if (node.op_type() == "ConstantOfShape")
    defaultElem = builder.getF32Type();
  else if (node.op_type() == "ArgMax" || node.op_type() == "ArgMin")
    defaultElem = builder.getI64Type();
  // Quantization (models quantized by onnxruntime declare no intermediate
  // types): DequantizeLinear gives its scale's type, QuantizeLinear its zero
  // point's (uint8 without one), the integer products int32, the QLinear
  // ops their output zero point's. `output_dtype` is read by inference.
  else if (node.op_type() == "DequantizeLinear")
    defaultElem = operandElem(1) ? operandElem(1) : builder.getF32Type();
  else if (node.op_type() == "QuantizeLinear" ||
           node.op_type() == "DynamicQuantizeLinear")
    defaultElem = operandElem(2)
                      ? operandElem(2)
                      : IntegerType::get(ctx, 8, IntegerType::Unsigned);
  else if (node.op_type() == "MatMulInteger" || node.op_type() == "ConvInteger")
    defaultElem = builder.getI32Type();
  else if (node.op_type() == "QLinearMatMul" || node.op_type() == "QLinearConv")
    defaultElem = operandElem(7) ? operandElem(7) : defaultElem;
  for (const NamedAttribute &a : attrs) {
    if (node.op_type() == "ConstantOfShape" && a.getName() == "value")
      if (auto e = dyn_cast<ElementsAttr>(a.getValue()))
        defaultElem = e.getElementType();
    if (node.op_type() == "EyeLike" && a.getName() == "dtype")
      if (auto i = dyn_cast<IntegerAttr>(a.getValue()))
        if (Type t = onnxops::getElementTypeForOnnxDataType(ctx, i.getInt()))
          defaultElem = t;
  }
  SmallVector<Type> resultTypes;
  for (int i = 0; i < numResults; ++i) {
    bool present = i < node.output_size() && !node.output(i).empty();
    Type t = builder.getNoneType();
    if (present) {
      // Dropout's mask is bool.
      t = UnrankedTensorType::get(node.op_type() == "Dropout" && i == 1
                                      ? builder.getI1Type()
                                      : defaultElem);
      // TopK's indices are int64; LayerNormalization's statistics are
      // float32 (its default stash_type).
      if (node.op_type() == "TopK" && i == 1)
        t = UnrankedTensorType::get(builder.getI64Type());
      if (node.op_type() == "LayerNormalization" && i > 0)
        t = UnrankedTensorType::get(builder.getF32Type());
      if (node.op_type() == "DynamicQuantizeLinear" && i == 1)
        t = UnrankedTensorType::get(builder.getF32Type());
      if (Type hinted = declaredType(node.output(i))) {
        auto rt = dyn_cast<RankedTensorType>(hinted);
        if (rt && mainGraphOutputs.contains(node.output(i)) &&
            declared.size() == 1 && registered &&
            registered->hasInterface<onnxops::InferShapesOpInterface>())
          hinted = RankedTensorType::get(
              SmallVector<int64_t>(rt.getRank(), ShapedType::kDynamic),
              rt.getElementType());
        t = hinted;
      }
    }
    resultTypes.push_back(t);
  }

  FailureOr<Operation *> created =
      buildOp(opName, operands, attrs, resultTypes, schema.numRegions, loc);
  if (failed(created))
    return failure();
  Operation *op = *created;

  // Subgraphs become regions ending in onnx.Yield; they may use values of
  // the enclosing graphs.
  SmallVector<SmallVector<Type>> yieldTypes;
  for (auto [i, g] : llvm::enumerate(regionGraphs)) {
    Block *block = new Block();
    op->getRegion(i).push_back(block);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(block);
    scopes.emplace_back();
    declared.emplace_back();
    for (const auto &in : g->input()) {
      FailureOr<Type> t = convertValueType(in.type(), loc, nullptr);
      if (failed(t))
        return failure();
      scopes.back()[in.name()] = block->addArgument(*t, loc);
    }
    if (failed(importGraphBody(*g)))
      return failure();
    SmallVector<Value> results;
    for (const auto &out : g->output()) {
      Value v = lookup(out.name());
      if (!v)
        return nodeError(node, loc)
               << "subgraph output '" << out.name() << "' is not defined";
      results.push_back(v);
    }
    yieldTypes.emplace_back(
        llvm::map_range(results, [](Value v) { return v.getType(); }));
    onnxops::YieldOp::create(builder, loc, results);
    scopes.pop_back();
    declared.pop_back();
  }
  refineControlFlowResults(op, yieldTypes);

  if (failed(finishOp(op)))
    return failure();
  for (int i = 0; i < node.output_size(); ++i)
    if (!node.output(i).empty())
      scopes.back()[node.output(i)] = op->getResult(i);
  return success();
}

Type Importer::declaredType(const std::string &name) {
  for (auto it = declared.rbegin(); it != declared.rend(); ++it) {
    auto found = it->find(name);
    if (found == it->end())
      continue;
    // A declaration we cannot convert is only a hint: ignore it.
    ScopedDiagnosticHandler silence(ctx,
                                    [](Diagnostic &) { return success(); });
    FailureOr<Type> t =
        convertValueType(*found->second, builder.getUnknownLoc(), nullptr);
    if (failed(t) || !isa<TensorType>(*t))
      return {};
    return *t;
  }
  return {};
}

LogicalResult Importer::importGraphBody(const onnx::GraphProto &graph) {
  for (const auto &vi : graph.value_info())
    if (vi.has_type())
      declared.back()[vi.name()] = &vi.type();
  for (const auto &out : graph.output())
    if (out.has_type())
      declared.back()[out.name()] = &out.type();
  for (const auto &init : graph.initializer()) {
    if (scopes.size() == 1 && weightArgs.contains(init.name()))
      continue; // a weight argument (--external-weights)
    Location loc = NameLoc::get(builder.getStringAttr(init.name()),
                                FileLineColLoc::get(ctx, sourceName, 0, 0));
    FailureOr<ElementsAttr> value = convertTensor(init, loc);
    if (failed(value))
      return failure();
    scopes.back()[init.name()] =
        arith::ConstantOp::create(builder, loc, cast<TypedAttr>(*value))
            .getResult();
  }
  for (const auto &[i, node] : llvm::enumerate(graph.node()))
    if (failed(importNode(node, i)))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp> Importer::importModel(const onnx::ModelProto &model) {
  Location fileLoc = FileLineColLoc::get(ctx, sourceName, 0, 0);
  if (!model.has_graph())
    return emitError(fileLoc) << "'" << sourceName
                              << "' is not an ONNX model: it has no graph",
           nullptr;
  opset = 0;
  bool haveDefaultDomain = false;
  for (const auto &imp : model.opset_import())
    if (imp.domain().empty() || imp.domain() == "ai.onnx") {
      opset = imp.version();
      haveDefaultDomain = true;
    }
  if (!haveDefaultDomain) {
    if (model.ir_version() < 3 && model.opset_import_size() == 0)
      opset = 1;
    else if (model.graph().node_size() > 0)
      return emitError(fileLoc) << "'" << sourceName
                                << "' imports no version of the ai.onnx "
                                   "operator set",
             nullptr;
  }
  const onnx::GraphProto &graph = model.graph();
  if (failed(bindInputShapes(graph, fileLoc)))
    return nullptr;

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  (*module)->setAttr("onnx.opset", builder.getI64IntegerAttr(opset));
  (*module)->setAttr("onnx.ir_version",
                     builder.getI64IntegerAttr(model.ir_version()));
  if (!model.producer_name().empty())
    (*module)->setAttr("onnx.producer",
                       builder.getStringAttr(model.producer_name()));

  llvm::StringSet<llvm::MallocAllocator> initNames;
  for (const auto &init : graph.initializer())
    initNames.insert(init.name());

  // Function signature.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<std::string> argNames;
  for (const auto &in : graph.input()) {
    if (initNames.contains(in.name()))
      continue; // IR < 4 lists initializers among the inputs.
    Location loc = NameLoc::get(builder.getStringAttr(in.name()), fileLoc);
    SmallVector<std::string> dimNames;
    FailureOr<Type> t = convertValueType(in.type(), loc, &dimNames, in.name());
    if (failed(t))
      return nullptr;
    if (!isa<RankedTensorType>(*t))
      return emitError(loc) << "input '" << in.name()
                            << "' has no shape; Kiln needs the rank of every "
                               "model input",
             nullptr;
    argTypes.push_back(*t);
    argNames.push_back(in.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("kiln.name", builder.getStringAttr(in.name())),
         builder.getNamedAttr("kiln.dim_names",
                              dimNamesAttr(builder, dimNames))}));
  }

  weightArgs.clear();
  if (options.externalWeights &&
      failed(addWeightArguments(graph, argTypes, argAttrs, argNames)))
    return nullptr;

  auto func = func::FuncOp::create(fileLoc, options.functionName,
                                   builder.getFunctionType(argTypes, {}));
  module->push_back(func);
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  scopes.clear();
  scopes.emplace_back();
  declared.clear();
  declared.emplace_back();
  for (auto [i, name] : llvm::enumerate(argNames))
    scopes.back()[name] = entry->getArgument(i);
  for (auto [arg, name] : llvm::zip(entry->getArguments(), argNames))
    arg.setLoc(NameLoc::get(builder.getStringAttr(name), fileLoc));

  // With symbolic inputs, the outputs' declared dims are suspect (an output
  // declared [5, 4] that computes [N, 4]): they hint rank and element type
  // only. A model whose inputs are all static keeps them as hints (checked
  // at run time where the lowering computes the dim).
  bool symbolicInputs = llvm::any_of(argTypes, [](Type t) {
    auto rt = dyn_cast<RankedTensorType>(t);
    return !rt || !rt.hasStaticShape();
  });
  if (symbolicInputs)
    for (const auto &out : graph.output())
      mainGraphOutputs.insert(out.name());
  if (failed(importGraphBody(graph)))
    return nullptr;

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &out : graph.output()) {
    Location loc = NameLoc::get(builder.getStringAttr(out.name()), fileLoc);
    Value v = lookup(out.name());
    if (!v)
      return emitError(loc) << "graph output '" << out.name()
                            << "' is not produced by any node",
             nullptr;
    SmallVector<std::string> dimNames;
    Type declared = v.getType();
    if (out.has_type()) {
      FailureOr<Type> t = convertValueType(out.type(), loc, &dimNames);
      if (failed(t))
        return nullptr;
      declared = *t;
    }
    // The output has the computed shape (as in onnxruntime): a declared dim
    // only fills in what inference could not rank; a declared shape that
    // contradicts the computed one is a warning. A different element type
    // is an error.
    auto inferred = dyn_cast<RankedTensorType>(v.getType());
    auto decl = dyn_cast<RankedTensorType>(declared);
    Type resultType = v.getType();
    if (decl && inferred && inferred != decl) {
      if (inferred.getElementType() != decl.getElementType())
        return emitError(loc)
                   << "graph output '" << out.name() << "' is declared as "
                   << decl << " but computes " << inferred,
               nullptr;
      if (failed(verifyCompatibleShape(inferred, decl))) {
        InFlightDiagnostic w = emitWarning(loc);
        w << "graph output '" << out.name() << "'";
        if (Operation *def = v.getDefiningOp();
            def && isa<NameLoc>(def->getLoc()))
          w << " of " << nodeLabel(def);
        w << " is declared as " << decl << " but computes " << inferred
          << "; the computed shape is used";
      }
    } else if (decl && !inferred) {
      if (getElementTypeOrSelf(v.getType()) != decl.getElementType())
        return emitError(loc)
                   << "graph output '" << out.name() << "' is declared as "
                   << decl << " but computes " << v.getType(),
               nullptr;
      // Unranked: the declared rank (dims as computed at run time).
      resultType = RankedTensorType::get(
          SmallVector<int64_t>(decl.getRank(), ShapedType::kDynamic),
          decl.getElementType());
      v = tensor::CastOp::create(builder, loc, resultType, v);
    }
    if (auto rt = dyn_cast<RankedTensorType>(resultType))
      dimNames.resize(rt.getRank());
    results.push_back(v);
    resultTypes.push_back(resultType);
    resultAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("kiln.name", builder.getStringAttr(out.name())),
         builder.getNamedAttr("kiln.dim_names",
                              dimNamesAttr(builder, dimNames))}));
  }
  func::ReturnOp::create(builder, fileLoc, results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);

  if (options.externalWeights && !options.externalWeights->weights.empty()) {
    const ExternalWeights &ext = *options.externalWeights;
    (*module)->setAttr(
        "kiln.external_weights",
        builder.getDictionaryAttr(
            {builder.getNamedAttr("file", builder.getStringAttr(ext.fileName)),
             builder.getNamedAttr("layout_hash",
                                  builder.getStringAttr(ext.layoutHashHex())),
             builder.getNamedAttr("file_bytes",
                                  builder.getI64IntegerAttr(ext.fileBytes))}));
  }

  if (failed(verify(*module)))
    return nullptr;
  return module;
}

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

OwningOpRef<ModuleOp>
mlir::kiln::importOnnxBuffer(MLIRContext *context, StringRef bytes,
                             StringRef baseDir, StringRef sourceName,
                             const OnnxImportOptions &options) {
  context->loadDialect<onnxops::OnnxDialect, func::FuncDialect,
                       arith::ArithDialect, tensor::TensorDialect>();
  Location fileLoc = FileLineColLoc::get(context, sourceName, 0, 0);
  try {
    onnx::ModelProto model;
    if (bytes.size() > static_cast<size_t>(INT_MAX))
      return emitError(fileLoc) << "'" << sourceName
                                << "' is larger than 2 GiB; store its weights "
                                   "as external data",
             nullptr;
    if (!model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      return emitError(fileLoc) << "'" << sourceName
                                << "' is not a valid ONNX model (the protobuf "
                                   "could not be parsed: truncated or not an "
                                   "ONNX file)",
             nullptr;
    if (model.ir_version() <= 0 && !model.has_graph())
      return emitError(fileLoc) << "'" << sourceName
                                << "' is not a valid ONNX model (no IR version "
                                   "and no graph)",
             nullptr;
    Importer importer(context, baseDir, sourceName, options);
    return importer.importModel(model);
  } catch (const std::exception &e) {
    return emitError(fileLoc)
               << "while reading '" << sourceName << "': " << e.what(),
           nullptr;
  } catch (...) {
    return emitError(fileLoc)
               << "while reading '" << sourceName << "': unknown error",
           nullptr;
  }
}

bool mlir::kiln::readModelFile(StringRef path, std::string &bytes,
                               std::string &error) {
  uint64_t size = 0;
  const char *why = nullptr;
  std::string name = path.str();
  int fd = kiln_open_regular_file(name.c_str(), &size, &why);
  if (fd < 0) {
    error = "cannot read '" + name + "': " + why;
    return false;
  }
  llvm::scope_exit closeFd([&] { close(fd); });
  // protobuf parses at most 2 GiB; larger models keep weights outside.
  if (size > static_cast<uint64_t>(INT_MAX)) {
    error = "'" + name +
            "' is larger than 2 GiB; store its weights as external data";
    return false;
  }
  bytes.resize(size);
  if (kiln_read_file_range(fd, 0, size, bytes.data(), &why)) {
    error = "cannot read '" + name + "': " + why;
    return false;
  }
  return true;
}

OwningOpRef<ModuleOp>
mlir::kiln::importOnnxFile(MLIRContext *context, StringRef path,
                           const OnnxImportOptions &options) {
  std::string bytes, error;
  if (!readModelFile(path, bytes, error))
    return emitError(FileLineColLoc::get(context, path, 0, 0)) << error,
           nullptr;
  StringRef dir = llvm::sys::path::parent_path(path);
  return importOnnxBuffer(context, bytes, dir.empty() ? "." : dir, path,
                          options);
}

void mlir::kiln::registerOnnxImportTranslation() {
  static TranslateToMLIRRegistration reg(
      "import-onnx", "Import an ONNX model (ModelProto) into the onnx dialect",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buf =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        StringRef name = buf->getBufferIdentifier();
        StringRef dir = llvm::sys::path::parent_path(name);
        OwningOpRef<ModuleOp> m = importOnnxBuffer(
            context, buf->getBuffer(), dir.empty() ? "." : dir, name);
        return OwningOpRef<Operation *>(m.release());
      },
      [](DialectRegistry &registry) {
        registry.insert<onnxops::OnnxDialect, func::FuncDialect,
                        arith::ArithDialect, tensor::TensorDialect>();
      });
}
