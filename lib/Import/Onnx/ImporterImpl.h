//===- ImporterImpl.h - The ONNX importer's shared state --------*- C++ -*-===//
//
// Private to lib/Import/Onnx: the Importer class whose methods are split over
// Importer.cpp (models, graphs, nodes, entry points), Tensors.cpp (types,
// tensors, external data, attributes, weight arguments) and OpsetUpgrades.cpp
// (older-opset forms rewritten to the latest schema). All three are compiled
// with -fexceptions: protobuf's generated code may throw, and every exception
// is caught at the entry points in Importer.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_LIB_IMPORT_ONNX_IMPORTERIMPL_H
#define KILN_LIB_IMPORT_ONNX_IMPORTERIMPL_H

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

namespace mlir::kiln::onnx_import {

/// Formal signature of an onnx op, from the generated schema table.
struct OpSchemaInfo {
  int sinceVersion;
  int numInputs;
  bool lastInputVariadic;
  int numOutputs;
  bool lastOutputVariadic;
  int numRegions;
};

/// The generated schema table (OnnxSchema.inc) by ONNX op type.
const llvm::StringMap<OpSchemaInfo> &getSchemaTable();
/// Region attribute names (ONNX GRAPH attributes) per op, in region order.
const llvm::StringMap<SmallVector<std::string, 2>> &getRegionTable();

/// Element type of `v` if it is a shaped value.
inline Type elementTypeOf(Value v) {
  if (auto st = dyn_cast<ShapedType>(v.getType()))
    return st.getElementType();
  return {};
}

/// The `kiln.dim_names` attribute: one name per dim ("" when it has none).
inline ArrayAttr dimNamesAttr(Builder &b, ArrayRef<std::string> names) {
  SmallVector<Attribute> attrs;
  for (const auto &n : names)
    attrs.push_back(b.getStringAttr(n));
  return b.getArrayAttr(attrs);
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
  /// `inputName`, for a graph input: its dims without a name are named
  /// `<inputName>:<axis>` (in `dimNames`, and when looking up bound dims).
  FailureOr<Type> convertValueType(const onnx::TypeProto &type, Location loc,
                                   SmallVectorImpl<std::string> *dimNames,
                                   StringRef inputName = {});
  /// Turns options.inputShapes into bound dims (checked against the graph's
  /// inputs); fails with a message naming the input.
  LogicalResult bindInputShapes(const onnx::GraphProto &graph, Location loc);
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
  /// The `expectedBytes` of `tensor`'s external data: its file must resolve
  /// (symlinks included) to a regular file inside the model's folder.
  LogicalResult readExternalData(const onnx::TensorProto &tensor,
                                 int64_t expectedBytes, std::string &out,
                                 Location loc);

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
  /// "node 'NAME' (Type, opset N)" for an op the importer created.
  std::string nodeLabel(Operation *op) const;
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
  /// The main graph's outputs when some input has symbolic dims: what they
  /// declare hints the rank and element type of an op that infers its
  /// shapes, not its dims (a declared [5, 4] output that computes [N, 4] has
  /// the computed shape, as in onnxruntime).
  llvm::StringSet<> mainGraphOutputs;
  int64_t resourceCounter = 0;
  /// Top-level initializers imported as weight arguments.
  llvm::StringSet<> weightArgs;
};

} // namespace mlir::kiln::onnx_import

#endif // KILN_LIB_IMPORT_ONNX_IMPORTERIMPL_H
