//===- Importer.cpp - ONNX ModelProto to the onnx dialect -----------------===//
//
// Compiled with -fexceptions: protobuf's generated code may throw, and every
// exception is caught at this boundary and turned into a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "kiln/Import/Onnx/Importer.h"

#include "kiln/Dialect/Onnx/IR/OnnxDialect.h"
#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif
#include <onnx/onnx_pb.h>

#include <cstring>
#include <exception>

using namespace mlir;
using namespace mlir::kiln;

namespace {

/// Formal signature of an onnx op, from the generated schema table.
struct OpSchemaInfo {
  int sinceVersion;
  int numInputs;
  bool lastInputVariadic;
  int numOutputs;
  bool lastOutputVariadic;
  int numRegions;
};

const llvm::StringMap<OpSchemaInfo> &getSchemaTable() {
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

/// Region attribute names (ONNX GRAPH attributes) per op, in region order.
const llvm::StringMap<SmallVector<std::string, 2>> &getRegionTable() {
  static const llvm::StringMap<SmallVector<std::string, 2>> table = [] {
    llvm::StringMap<SmallVector<std::string, 2>> t;
#define KILN_ONNX_REGION(NAME, INDEX, ATTR) t[NAME].push_back(ATTR);
#include "kiln/Dialect/Onnx/IR/OnnxSchema.inc"
#undef KILN_ONNX_REGION
    return t;
  }();
  return table;
}

class Importer {
public:
  Importer(MLIRContext *ctx, StringRef baseDir, StringRef sourceName,
           const OnnxImportOptions &options)
      : ctx(ctx), builder(ctx), baseDir(baseDir.str()),
        sourceName(sourceName.str()), options(options) {}

  OwningOpRef<ModuleOp> importModel(const onnx::ModelProto &model);

private:
  // Types and tensors.
  FailureOr<Type> convertElementType(int32_t onnxType, Location loc);
  FailureOr<Type> convertValueType(const onnx::TypeProto &type, Location loc,
                                   SmallVectorImpl<std::string> *dimNames);
  FailureOr<ElementsAttr> convertTensor(const onnx::TensorProto &tensor,
                                        Location loc);
  /// The tensor's type and its data as raw little-endian bytes (ONNX
  /// raw_data layout), from raw_data, the typed fields or external data.
  LogicalResult readTensor(const onnx::TensorProto &tensor, Location loc,
                           RankedTensorType &type, std::string &bytes);
  /// Adds the initializers `options.externalWeights` takes as function
  /// arguments after the inputs (`kilnc --external-weights`).
  LogicalResult addWeightArguments(const onnx::GraphProto &graph,
                                   SmallVectorImpl<Type> &argTypes,
                                   SmallVectorImpl<DictionaryAttr> &argAttrs,
                                   SmallVectorImpl<std::string> &argNames);
  LogicalResult readExternalData(const onnx::TensorProto &tensor,
                                 std::string &out, Location loc);

  // Graphs and nodes.
  LogicalResult importGraphBody(const onnx::GraphProto &graph);
  LogicalResult importNode(const onnx::NodeProto &node, int64_t index);
  LogicalResult importConstantNode(const onnx::NodeProto &node, Location loc);
  FailureOr<NamedAttribute> convertAttribute(const onnx::AttributeProto &attr,
                                             Location loc);
  LogicalResult normalize(const onnx::NodeProto &node, Location loc,
                          SmallVectorImpl<Value> &operands,
                          SmallVectorImpl<NamedAttribute> &attrs);
  LogicalResult importLegacySoftmax(const onnx::NodeProto &node, Location loc,
                                    Value input,
                                    SmallVectorImpl<NamedAttribute> &attrs);
  FailureOr<Operation *> buildOp(StringRef opName, ValueRange operands,
                                 ArrayRef<NamedAttribute> attrs,
                                 ArrayRef<Type> resultTypes,
                                 unsigned numRegions, Location loc);
  LogicalResult finishOp(Operation *op);
  FailureOr<Value> buildSimpleOp(StringRef opName, ValueRange operands,
                                 ArrayRef<NamedAttribute> attrs,
                                 Type resultType, Location loc);
  void refineControlFlowResults(Operation *op,
                                ArrayRef<SmallVector<Type>> yieldTypes);
  Type declaredType(const std::string &name);
  Value lookup(const std::string &name) const;
  Value noValue(Location loc);
  Value i64Constant(ArrayRef<int64_t> values, Location loc);
  Location nodeLoc(const onnx::NodeProto &node, int64_t index);
  InFlightDiagnostic nodeError(const onnx::NodeProto &node, Location loc);

  MLIRContext *ctx;
  OpBuilder builder;
  std::string baseDir;
  std::string sourceName;
  OnnxImportOptions options;
  /// Opset of the default (ai.onnx) domain.
  int64_t opset = 0;
  /// ONNX value name → SSA value, one map per graph scope (innermost last).
  SmallVector<llvm::StringMap<Value>, 2> scopes;
  /// ONNX value name → type the graph declares for it (value_info, graph
  /// outputs), per graph scope like `scopes`.
  SmallVector<llvm::StringMap<const onnx::TypeProto *>, 2> declared;
  int64_t resourceCounter = 0;
  /// Top-level initializers imported as weight arguments.
  llvm::StringSet<> weightArgs;
};

} // namespace

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::convertElementType(int32_t t, Location loc) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    return Type(builder.getF32Type());
  case onnx::TensorProto::DOUBLE:
    return Type(builder.getF64Type());
  case onnx::TensorProto::FLOAT16:
    return Type(builder.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(builder.getBF16Type());
  case onnx::TensorProto::INT8:
    return Type(builder.getIntegerType(8));
  case onnx::TensorProto::INT16:
    return Type(builder.getIntegerType(16));
  case onnx::TensorProto::INT32:
    return Type(builder.getIntegerType(32));
  case onnx::TensorProto::INT64:
    return Type(builder.getIntegerType(64));
  case onnx::TensorProto::UINT8:
    return Type(builder.getIntegerType(8, /*isSigned=*/false));
  case onnx::TensorProto::UINT16:
    return Type(builder.getIntegerType(16, false));
  case onnx::TensorProto::UINT32:
    return Type(builder.getIntegerType(32, false));
  case onnx::TensorProto::UINT64:
    return Type(builder.getIntegerType(64, false));
  case onnx::TensorProto::BOOL:
    return Type(builder.getI1Type());
  case onnx::TensorProto::COMPLEX64:
    return Type(ComplexType::get(builder.getF32Type()));
  case onnx::TensorProto::COMPLEX128:
    return Type(ComplexType::get(builder.getF64Type()));
  case 17: // FLOAT8E4M3FN
    return Type(builder.getType<Float8E4M3FNType>());
  case 18: // FLOAT8E4M3FNUZ
    return Type(builder.getType<Float8E4M3FNUZType>());
  case 19: // FLOAT8E5M2
    return Type(builder.getType<Float8E5M2Type>());
  case 20: // FLOAT8E5M2FNUZ
    return Type(builder.getType<Float8E5M2FNUZType>());
  default:
    return emitError(loc) << "unsupported ONNX element type " << t
                          << " (string and other non-numeric tensors are not "
                             "supported)",
           failure();
  }
}

FailureOr<Type>
Importer::convertValueType(const onnx::TypeProto &type, Location loc,
                           SmallVectorImpl<std::string> *dimNames) {
  if (!type.has_tensor_type())
    return emitError(loc) << "only tensor-typed graph values are supported "
                             "(sequence, map and optional values are not)",
           failure();
  const auto &tt = type.tensor_type();
  FailureOr<Type> elem = convertElementType(tt.elem_type(), loc);
  if (failed(elem))
    return failure();
  if (!tt.has_shape())
    return Type(UnrankedTensorType::get(*elem));
  SmallVector<int64_t> shape;
  for (const auto &dim : tt.shape().dim()) {
    if (dim.has_dim_value() && dim.dim_value() >= 0) {
      shape.push_back(dim.dim_value());
      if (dimNames)
        dimNames->push_back("");
    } else if (dim.has_dim_param() &&
               options.boundDims.count(dim.dim_param())) {
      shape.push_back(options.boundDims.at(dim.dim_param()));
      if (dimNames)
        dimNames->push_back("");
    } else {
      shape.push_back(ShapedType::kDynamic);
      if (dimNames)
        dimNames->push_back(dim.has_dim_param() ? dim.dim_param() : "");
    }
  }
  return Type(RankedTensorType::get(shape, *elem));
}

LogicalResult Importer::readExternalData(const onnx::TensorProto &tensor,
                                         std::string &out, Location loc) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &kv : tensor.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset" || kv.key() == "length") {
      char *end = nullptr;
      long long v = std::strtoll(kv.value().c_str(), &end, 10);
      if (kv.value().empty() || *end || v < 0)
        return emitError(loc)
               << "tensor '" << tensor.name() << "': bad external-data "
               << kv.key() << " '" << kv.value() << "'";
      (kv.key() == "offset" ? offset : length) = v;
    }
  }
  if (location.empty())
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': external data without a location";
  // The ONNX spec: a path relative to the model's folder, inside it.
  if (llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': external data location '" << location
                          << "' must be a relative path inside the model's "
                             "folder";
  SmallString<256> path(baseDir);
  llvm::sys::path::append(path, location);
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return emitError(loc) << "tensor '" << tensor.name()
                          << "': cannot read external data file '" << path
                          << "': " << buf.getError().message();
  int64_t size = (*buf)->getBufferSize();
  if (length < 0)
    length = size - offset;
  if (offset > size || length > size - offset)
    return emitError(loc) << "tensor '" << tensor.name() << "': external data ["
                          << offset << ", " << offset + length
                          << ") is outside '" << path << "' (" << size
                          << " bytes)";
  out.assign((*buf)->getBufferStart() + offset, length);
  return success();
}

/// Appends `values` to `bytes` as little-endian elements of `width` bytes.
template <typename T>
static void appendNarrowed(std::string &bytes, const T &values, int width) {
  for (auto v : values) {
    uint64_t u = static_cast<uint64_t>(v);
    for (int i = 0; i < width; ++i)
      bytes.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
  }
}

LogicalResult Importer::readTensor(const onnx::TensorProto &tensor,
                                   Location loc, RankedTensorType &type,
                                   std::string &bytes) {
  FailureOr<Type> elem = convertElementType(tensor.data_type(), loc);
  if (failed(elem))
    return failure();
  SmallVector<int64_t> shape;
  int64_t numElements = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0)
      return emitError(loc) << "tensor '" << tensor.name()
                            << "' has a negative dimension " << d,
             failure();
    shape.push_back(d);
    // Element counts past 2^48 cannot be real data; also keeps the byte
    // count below from overflowing.
    if (d != 0 && numElements > (int64_t(1) << 48) / d)
      return emitError(loc)
                 << "tensor '" << tensor.name() << "' has too many elements",
             failure();
    numElements *= d;
  }
  type = RankedTensorType::get(shape, *elem);
  int64_t width;
  if (auto complex = dyn_cast<ComplexType>(*elem))
    width = 2 * complex.getElementType().getIntOrFloatBitWidth() / 8;
  else
    width = std::max<int64_t>(1, elem->getIntOrFloatBitWidth() / 8);

  bytes.clear();
  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    if (failed(readExternalData(tensor, bytes, loc)))
      return failure();
  } else if (tensor.has_raw_data()) {
    bytes = tensor.raw_data();
  } else {
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      bytes.assign(reinterpret_cast<const char *>(tensor.float_data().data()),
                   tensor.float_data_size() * sizeof(float));
      break;
    case onnx::TensorProto::DOUBLE:
      bytes.assign(reinterpret_cast<const char *>(tensor.double_data().data()),
                   tensor.double_data_size() * sizeof(double));
      break;
    case onnx::TensorProto::INT64:
      bytes.assign(reinterpret_cast<const char *>(tensor.int64_data().data()),
                   tensor.int64_data_size() * sizeof(int64_t));
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      appendNarrowed(bytes, tensor.uint64_data(), width);
      break;
    case onnx::TensorProto::COMPLEX64:
      bytes.assign(reinterpret_cast<const char *>(tensor.float_data().data()),
                   tensor.float_data_size() * sizeof(float));
      break;
    case onnx::TensorProto::STRING:
      return emitError(loc) << "string tensors are not supported", failure();
    default:
      // INT32, INT16, INT8, UINT8, UINT16, BOOL, FLOAT16, BFLOAT16, FLOAT8*:
      // one int32_data entry per element holding the bit pattern.
      appendNarrowed(bytes, tensor.int32_data(), width);
      break;
    }
  }
  if (static_cast<int64_t>(bytes.size()) != numElements * width)
    return emitError(loc) << "tensor '" << tensor.name() << "' of type " << type
                          << " needs " << numElements * width
                          << " bytes of data, found " << bytes.size();
  return success();
}

FailureOr<ElementsAttr> Importer::convertTensor(const onnx::TensorProto &tensor,
                                                Location loc) {
  RankedTensorType type;
  std::string bytes;
  if (failed(readTensor(tensor, loc, type, bytes)))
    return failure();
  Type elem = type.getElementType();
  int64_t numElements = type.getNumElements();
  if (elem.isInteger(1)) {
    SmallVector<bool> bools;
    for (char c : bytes)
      bools.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, bools));
  }
  if (numElements <= options.maxInlineElements) {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(
            type, ArrayRef<char>(bytes.data(), bytes.size()), splat))
      return emitError(loc)
                 << "tensor '" << tensor.name() << "': invalid data buffer",
             failure();
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(
        type, ArrayRef<char>(bytes.data(), bytes.size())));
  }
  std::string blobName =
      tensor.name().empty() ? "onnx_tensor_" + std::to_string(resourceCounter++)
                            : tensor.name();
  for (char &c : blobName)
    if (!llvm::isAlnum(c) && c != '_' && c != '.')
      c = '_';
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(bytes.data(), bytes.size()), alignof(uint64_t));
  return ElementsAttr(
      DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

FailureOr<NamedAttribute>
Importer::convertAttribute(const onnx::AttributeProto &attr, Location loc) {
  auto name = builder.getStringAttr(attr.name());
  switch (attr.type()) {
  case onnx::AttributeProto::INT:
    return NamedAttribute(name, builder.getI64IntegerAttr(attr.i()));
  case onnx::AttributeProto::FLOAT:
    return NamedAttribute(name, builder.getF32FloatAttr(attr.f()));
  case onnx::AttributeProto::STRING:
    return NamedAttribute(name, builder.getStringAttr(attr.s()));
  case onnx::AttributeProto::INTS: {
    SmallVector<int64_t> v(attr.ints().begin(), attr.ints().end());
    return NamedAttribute(name, builder.getI64ArrayAttr(v));
  }
  case onnx::AttributeProto::FLOATS: {
    SmallVector<float> v(attr.floats().begin(), attr.floats().end());
    return NamedAttribute(name, builder.getF32ArrayAttr(v));
  }
  case onnx::AttributeProto::STRINGS: {
    SmallVector<StringRef> v;
    for (const auto &s : attr.strings())
      v.push_back(s);
    return NamedAttribute(name, builder.getStrArrayAttr(v));
  }
  case onnx::AttributeProto::TENSOR: {
    FailureOr<ElementsAttr> t = convertTensor(attr.t(), loc);
    if (failed(t))
      return failure();
    return NamedAttribute(name, *t);
  }
  case onnx::AttributeProto::TYPE_PROTO: {
    FailureOr<Type> t = convertValueType(attr.tp(), loc, nullptr);
    if (failed(t))
      return failure();
    return NamedAttribute(name, TypeAttr::get(*t));
  }
  default:
    return emitError(loc) << "attribute '" << attr.name()
                          << "' has an unsupported type (" << attr.type()
                          << ")",
           failure();
  }
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

/// Element type of `v` if it is a shaped value.
static Type elementTypeOf(Value v) {
  if (auto st = dyn_cast<ShapedType>(v.getType()))
    return st.getElementType();
  return {};
}

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

LogicalResult Importer::finishOp(Operation *op) {
  // Verifier and shape-inference errors are re-emitted naming the node (name,
  // op type, opset) instead of "'onnx.X' op ...".
  std::string message;
  LogicalResult result = success();
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
  if (succeeded(result))
    return success();
  StringRef type = op->getName().getStringRef();
  type.consume_front("onnx.");
  StringRef msg = message;
  std::string prefix = ("'" + op->getName().getStringRef() + "' op ").str();
  msg.consume_front(prefix);
  Location loc = op->getLoc();
  std::string name =
      isa<NameLoc>(loc) ? cast<NameLoc>(loc).getName().str() : "";
  return emitError(loc) << "node '" << name << "' (" << type << ", opset "
                        << opset << "): " << msg,
         failure();
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
      if (Type hinted = declaredType(node.output(i)))
        t = hinted;
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

void Importer::refineControlFlowResults(
    Operation *op, ArrayRef<SmallVector<Type>> yieldTypes) {
  auto unknownResult = [&](unsigned i) {
    return i < op->getNumResults() &&
           isa<UnrankedTensorType>(op->getResult(i).getType());
  };
  if (isa<onnxops::IfOp>(op) && yieldTypes.size() == 2) {
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      if (!unknownResult(i) || i >= yieldTypes[0].size() ||
          i >= yieldTypes[1].size())
        continue;
      Type a = yieldTypes[0][i], b = yieldTypes[1][i];
      if (a == b)
        op->getResult(i).setType(a);
      else if (Type e = getElementTypeOrSelf(a); e == getElementTypeOrSelf(b))
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

static ArrayAttr dimNamesAttr(Builder &b, ArrayRef<std::string> names) {
  SmallVector<Attribute> attrs;
  for (const auto &n : names)
    attrs.push_back(b.getStringAttr(n));
  return b.getArrayAttr(attrs);
}

/// The ModelABI.h dtype name and element size of an ONNX element type that
/// may be an external weight; 0 for the others (complex, string, 4-bit).
static int64_t weightElementSize(int32_t t, std::string &dtype) {
  switch (t) {
  case onnx::TensorProto::FLOAT:
    dtype = "f32";
    return 4;
  case onnx::TensorProto::DOUBLE:
    dtype = "f64";
    return 8;
  case onnx::TensorProto::FLOAT16:
    dtype = "f16";
    return 2;
  case onnx::TensorProto::BFLOAT16:
    dtype = "bf16";
    return 2;
  case onnx::TensorProto::INT8:
    dtype = "i8";
    return 1;
  case onnx::TensorProto::INT16:
    dtype = "i16";
    return 2;
  case onnx::TensorProto::INT32:
    dtype = "i32";
    return 4;
  case onnx::TensorProto::INT64:
    dtype = "i64";
    return 8;
  case onnx::TensorProto::UINT8:
    dtype = "u8";
    return 1;
  case onnx::TensorProto::UINT16:
    dtype = "u16";
    return 2;
  case onnx::TensorProto::UINT32:
    dtype = "u32";
    return 4;
  case onnx::TensorProto::UINT64:
    dtype = "u64";
    return 8;
  case onnx::TensorProto::BOOL:
    dtype = "bool";
    return 1;
  case 17:
    dtype = "f8e4m3fn";
    return 1;
  case 18:
    dtype = "f8e4m3fnuz";
    return 1;
  case 19:
    dtype = "f8e5m2";
    return 1;
  case 20:
    dtype = "f8e5m2fnuz";
    return 1;
  default:
    return 0;
  }
}

LogicalResult
Importer::addWeightArguments(const onnx::GraphProto &graph,
                             SmallVectorImpl<Type> &argTypes,
                             SmallVectorImpl<DictionaryAttr> &argAttrs,
                             SmallVectorImpl<std::string> &argNames) {
  ExternalWeights &ext = *options.externalWeights;
  llvm::StringSet<> inputs;
  for (const std::string &n : argNames)
    inputs.insert(n);
  for (const auto &init : graph.initializer()) {
    std::string dtype;
    int64_t width = weightElementSize(init.data_type(), dtype);
    if (width == 0 || init.name().empty() || inputs.contains(init.name()) ||
        weightArgs.contains(init.name()))
      continue;
    // The size from the dims alone, so small tensors are not read twice.
    int64_t bytes = width;
    bool tooLarge = false;
    for (int64_t d : init.dims()) {
      if (d < 0 || (d != 0 && bytes > (int64_t(1) << 50) / d)) {
        tooLarge = true;
        break;
      }
      bytes *= d;
    }
    if (tooLarge || bytes < ext.minBytes)
      continue; // readTensor reports bad dims when the constant is imported
    Location loc = NameLoc::get(builder.getStringAttr(init.name()),
                                FileLineColLoc::get(ctx, sourceName, 0, 0));
    ExternalWeight w;
    RankedTensorType type;
    if (failed(readTensor(init, loc, type, w.data)))
      return failure();
    w.name = init.name();
    w.dtype = dtype;
    w.onnxType = init.data_type();
    w.dims.assign(type.getShape().begin(), type.getShape().end());
    w.bytes = static_cast<int64_t>(w.data.size());
    w.offset = ext.nextOffset();
    SmallVector<std::string> dimNames(type.getRank());
    argTypes.push_back(type);
    argNames.push_back(init.name());
    argAttrs.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("kiln.name", builder.getStringAttr(init.name())),
         builder.getNamedAttr("kiln.dim_names",
                              dimNamesAttr(builder, dimNames)),
         builder.getNamedAttr("kiln.weight_offset",
                              builder.getI64IntegerAttr(w.offset))}));
    weightArgs.insert(init.name());
    ext.weights.push_back(std::move(w));
  }
  ext.finalize();
  return success();
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
    FailureOr<Type> t = convertValueType(in.type(), loc, &dimNames);
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
    auto inferred = dyn_cast<RankedTensorType>(v.getType());
    auto decl = dyn_cast<RankedTensorType>(declared);
    Type resultType = v.getType();
    if (decl && (!inferred || inferred != decl)) {
      if (inferred && failed(verifyCompatibleShape(inferred, decl)))
        return emitError(loc)
                   << "graph output '" << out.name() << "' is declared as "
                   << decl << " but computes " << inferred,
               nullptr;
      if (inferred && inferred.getElementType() != decl.getElementType())
        return emitError(loc)
                   << "graph output '" << out.name() << "' is declared as "
                   << decl << " but computes " << inferred,
               nullptr;
      v = tensor::CastOp::create(builder, loc, decl, v);
      resultType = decl;
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

OwningOpRef<ModuleOp>
mlir::kiln::importOnnxFile(MLIRContext *context, StringRef path,
                           const OnnxImportOptions &options) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buf)
    return emitError(UnknownLoc::get(context))
               << "cannot read '" << path << "': " << buf.getError().message(),
           nullptr;
  StringRef dir = llvm::sys::path::parent_path(path);
  return importOnnxBuffer(context, (*buf)->getBuffer(), dir.empty() ? "." : dir,
                          path, options);
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
