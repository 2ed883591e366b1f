//===- MixedPrecision.cpp - fp16/bf16 compute types with fp32 islands -----===//
//
// kiln-mixed-precision assigns every top-level onnx op that computes on f32
// tensors a compute type, in program order (so each op sees its producers'
// decisions):
//
//   contraction  MatMul, Gemm, Conv, ConvTranspose, Einsum, Attention: half
//                (their lowering accumulates in f32 and rounds once);
//   follow       elementwise and data movement: half when every non-constant
//                float input is half, else fp32;
//   reduction    accumulating reductions: fp32 over more than
//                `reduction-limit` elements, else follow;
//   sensitive    Softmax, normalizations, Exp/Log/Pow/Erf...: fp32, but
//                LayerNormalization and RMSNormalization with stash_type 1
//                follow (their statistics are f32 by definition);
//   other        no half rule (recurrences, control flow...): fp32.
//
// Elementwise ops and normalizations read only by QuantizeLinear (directly
// or through one another: an integer product's dequantization, bias and
// activation, a LayerNorm before its quantization) stay fp32: fused with
// the quantization they never reach memory, and half would only add
// conversions.
//
// A half candidate stays fp32 when pinned (`keep-fp32`), when a constant
// operand's finite values exceed the half type's range, or when calibration
// ranges say an input or result would overflow or be wholly subnormal. Then
// casts are placed at the borders of the fp32 islands and cleaned
// (MixedPrecisionCleanup.cpp), and the decisions are recorded for the
// compile report (`kiln.precision_plan` on the module).
//
// precision=tf32 keeps f32 storage and places no casts: it only marks the
// contractions "tf32"; their lowering carries the mark to the f32
// contraction it builds (kTF32Attr, kiln/Dialect/Kiln/IR/Precision.h),
// which NVIDIA targets run on TF32 tensor cores.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "MixedPrecision.h"
#include "NodeKeys.h"

#include "kiln/Dialect/Kiln/IR/Precision.h"
#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstdio>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNMIXEDPRECISION
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::mixed_precision;

namespace {

enum class OpClass { Contraction, Follow, Reduction, Sensitive, Other };

/// Elementwise ops of the follow class (the rest of it moves data).
const llvm::StringSet<> &elementwiseOps() {
  static const llvm::StringSet<> ops = {"Add",
                                        "Sub",
                                        "Mul",
                                        "Div",
                                        "Max",
                                        "Min",
                                        "Sum",
                                        "Mean",
                                        "Where",
                                        "Relu",
                                        "LeakyRelu",
                                        "PRelu",
                                        "Sigmoid",
                                        "HardSigmoid",
                                        "HardSwish",
                                        "Tanh",
                                        "Abs",
                                        "Neg",
                                        "Clip",
                                        "Sqrt",
                                        "Reciprocal",
                                        "Floor",
                                        "Ceil",
                                        "Round",
                                        "Sign",
                                        "Elu",
                                        "Selu",
                                        "Celu",
                                        "ThresholdedRelu",
                                        "Shrink",
                                        "Softsign",
                                        "Equal",
                                        "Less",
                                        "LessOrEqual",
                                        "Greater",
                                        "GreaterOrEqual",
                                        "Identity"};
  return ops;
}

/// Elementwise ops of the sensitive class (exponentials, logarithms, erf).
const llvm::StringSet<> &elementwiseSensitiveOps() {
  static const llvm::StringSet<> ops = {"Exp",      "Log",  "Pow", "Erf",
                                        "Softplus", "Gelu", "Mish"};
  return ops;
}

OpClass classify(StringRef type, std::string &why) {
  static const llvm::StringSet<> contractions = {
      "MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "Attention"};
  static const llvm::StringSet<> dataMovement = {
      // data movement and selection (no arithmetic)
      "Reshape",       "Transpose",    "Flatten",   "Squeeze", "Unsqueeze",
      "Concat",        "Split",        "Slice",     "Gather",  "GatherElements",
      "GatherND",      "Expand",       "Tile",      "Pad",     "MaxPool",
      "GlobalMaxPool", "ReduceMax",    "ReduceMin", "ArgMax",  "ArgMin",
      "DepthToSpace",  "SpaceToDepth", "Resize"};
  static const llvm::StringSet<> reductions = {
      "ReduceSum", "ReduceMean",  "ReduceSumSquare",  "ReduceL1",
      "ReduceL2",  "AveragePool", "GlobalAveragePool"};
  static const llvm::StringSet<> softmax = {"Softmax", "LogSoftmax"};
  static const llvm::StringSet<> norms = {
      "LayerNormalization",        "BatchNormalization",
      "InstanceNormalization",     "GroupNormalization",
      "RMSNormalization",          "LpNormalization",
      "MeanVarianceNormalization", "SkipLayerNormalization"};
  static const llvm::StringSet<> expLogReductions = {
      "ReduceLogSum", "ReduceLogSumExp", "ReduceProd", "LpPool",
      "GlobalLpPool"};
  bool expLog = elementwiseSensitiveOps().contains(type) ||
                expLogReductions.contains(type);
  if (contractions.contains(type))
    return OpClass::Contraction;
  if (elementwiseOps().contains(type) || dataMovement.contains(type))
    return OpClass::Follow;
  if (reductions.contains(type))
    return OpClass::Reduction;
  if (softmax.contains(type)) {
    why = "softmax stays fp32";
    return OpClass::Sensitive;
  }
  if (norms.contains(type)) {
    why = "normalization statistics stay fp32";
    return OpClass::Sensitive;
  }
  if (expLog) {
    why = "exp/log/pow/erf stay fp32";
    return OpClass::Sensitive;
  }
  if (type == "CumSum") {
    why = "running sums stay fp32";
    return OpClass::Sensitive;
  }
  why = ("no half rule for " + type).str();
  return OpClass::Other;
}

bool isF32Tensor(Type t) {
  auto st = dyn_cast<TensorType>(t);
  return st && st.getElementType().isF32();
}

bool isFloatTensor(Type t) {
  auto st = dyn_cast<TensorType>(t);
  return st && isa<FloatType>(st.getElementType());
}

/// Operand positions that carry the op's data type T (converted with it);
/// the other float operands (Resize's roi and scales) keep their type.
bool isDataPosition(Operation *op, unsigned i) {
  StringRef type = onnxOpType(op);
  if (type == "Resize" || type == "Upsample")
    return i == 0;
  return true;
}

bool isDataOperand(Operation *op, unsigned i) {
  return isDataPosition(op, i) && isF32Tensor(op->getOperand(i).getType());
}

/// A weight the model reads from its external weights file (an argument of
/// the model's function with kiln.weight_offset). Like a constant, it does
/// not vote on the precision of the op it feeds: a bias added to a half
/// product is converted with the op (once, when an instance loads its
/// weights), as an embedded bias is at compile time.
bool isExternalWeight(Value v) {
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || !arg.getOwner()->isEntryBlock())
    return false;
  auto fn = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
  return fn && fn.getArgAttr(arg.getArgNumber(), "kiln.weight_offset");
}

/// The dequantization of an integer product: Mul(Cast(int -> f32), constant
/// scales), as kiln-onnx-fuse-qdq writes it after ConvInteger or
/// MatMulInteger, or a DequantizeLinear of an activation (what a residual
/// Add reads in a quantized residual stream, kiln-onnx-insert-qdq). It runs
/// in fp32 (an integer product's sums may exceed the half type's range),
/// but its result is an activation like the float model's: the ops after it
/// may take it in half (cast right after it), as they take any activation
/// in a half build.
bool isDequantization(Operation *op) {
  if (op && onnxOpType(op) == "DequantizeLinear")
    return true;
  if (!op || onnxOpType(op) != "Mul" || op->getNumOperands() != 2)
    return false;
  for (unsigned i = 0; i < 2; ++i) {
    Value scale = op->getOperand(i), sums = op->getOperand(1 - i);
    auto cast = sums.getDefiningOp();
    if (!isConstantF32(scale) || !cast || onnxOpType(cast) != "Cast" ||
        cast->getNumOperands() != 1)
      continue;
    auto from = dyn_cast<ShapedType>(cast->getOperand(0).getType());
    if (from && isa<IntegerType>(from.getElementType()))
      return true;
  }
  return false;
}

/// A Gather from a constant or an external weight (an embedding table) by
/// integer indices: nothing computed votes on its precision.
bool isWeightLookup(Operation *op) {
  if (onnxOpType(op) != "Gather" || op->getNumOperands() != 2)
    return false;
  Value table = op->getOperand(0);
  return isConstantF32(table) || isExternalWeight(table);
}

/// LayerNormalization or RMSNormalization (statistics over the last axes,
/// a stash type).
bool isNormalization(Operation *op) {
  StringRef type = onnxOpType(op);
  return type == "LayerNormalization" || type == "RMSNormalization";
}

/// A normalization whose statistics its own definition keeps in float32
/// whatever its input type: LayerNormalization and RMSNormalization with
/// stash_type 1 (the default; their lowering extends a half input to f32
/// for the mean and variance and rounds once). It follows its input like
/// an elementwise op, so a half residual stream stays half around it, when
/// only its normalized output is used (Mean and InvStdDev have the stash
/// type).
bool hasStashedStatistics(Operation *op) {
  if (!isNormalization(op))
    return false;
  auto stash = op->getAttrOfType<IntegerAttr>("stash_type");
  if (stash && stash.getInt() != 1)
    return false;
  return llvm::all_of(op->getResults().drop_front(), [](Value r) {
    return r.use_empty() || isa<NoneType>(r.getType());
  });
}

/// Ops that may compute in fp32 inside the kernel of the QuantizeLinear
/// that reads them: elementwise arithmetic and the normalizations (what
/// kernel fusion puts in an integer product's epilogue or a row kernel
/// before the quantization).
bool isRequantizable(Operation *op) {
  StringRef type = onnxOpType(op);
  return elementwiseOps().contains(type) ||
         elementwiseSensitiveOps().contains(type) || isNormalization(op);
}

/// Number of elements an accumulating reduction combines per result, or -1
/// when unknown (dynamic).
int64_t reducedElements(Operation *op) {
  if (onnxOpType(op) == "AveragePool") {
    auto k = op->getAttrOfType<ArrayAttr>("kernel_shape");
    if (!k)
      return -1;
    int64_t n = 1;
    for (Attribute a : k)
      n *= cast<IntegerAttr>(a).getInt();
    return n;
  }
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape() ||
      out.getNumElements() == 0)
    return -1;
  return in.getNumElements() / out.getNumElements();
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

struct Decision {
  bool half = false;
  bool tf32 = false;
  std::string category; // rule, inputs, pin, calibration, constant range
  std::string reason;
};

struct MixedPrecisionPass
    : public kiln::impl::KilnMixedPrecisionBase<MixedPrecisionPass> {
  using Base::Base;

  // Limits of the half type.
  FloatType halfType;
  std::string halfName;
  double maxHalf = 65504.0, minNormal = 6.103515625e-05;
  bool tf32Mode = false;
  llvm::StringMap<double> calibrated; // value key -> max |x|
  llvm::StringSet<> usedPins;
  Converter converter;
  /// Ops read only by QuantizeLinear ops, directly or through other such
  /// ops (collectRequantized).
  llvm::SmallPtrSet<Operation *, 32> requantized;

  /// The requantized ops of `block`: an integer product's epilogue (its
  /// dequantization, bias, activation) or a normalization, when all they
  /// compute goes to QuantizeLinear. Fused with the quantization, they
  /// keep their values in registers, so half would save no memory and
  /// only add conversions (two or three per element of a GELU epilogue).
  /// A normalization's input is stored for its row kernel: what computes
  /// that input keeps its own precision.
  void collectRequantized(Block &block) {
    requantized.clear();
    for (Operation &op : llvm::reverse(block)) {
      if (!isRequantizable(&op))
        continue;
      bool any = false, all = true;
      for (Value r : op.getResults())
        for (Operation *user : r.getUsers()) {
          any = true;
          all &= onnxOpType(user) == "QuantizeLinear" ||
                 (requantized.contains(user) && !isNormalization(user));
        }
      if (any && all)
        requantized.insert(&op);
    }
  }

  LogicalResult loadRanges() {
    std::string path = ranges;
    if (path.empty())
      return success();
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return mlir::emitError(getOperation().getLoc())
             << "cannot read calibration ranges '" << path
             << "': " << buf.getError().message();
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse((*buf)->getBuffer());
    if (!json)
      return mlir::emitError(getOperation().getLoc())
             << "calibration ranges '" << path
             << "' are not JSON: " << llvm::toString(json.takeError());
    const llvm::json::Object *top = json->getAsObject();
    const llvm::json::Object *tensors =
        top ? top->getObject("tensors") : nullptr;
    if (!tensors)
      return mlir::emitError(getOperation().getLoc())
             << "calibration ranges '" << path
             << "' have no \"tensors\" object";
    for (const auto &[key, v] : *tensors) {
      const llvm::json::Object *o = v.getAsObject();
      std::optional<double> a = o ? o->getNumber("absmax") : std::nullopt;
      if (!a)
        return mlir::emitError(getOperation().getLoc())
               << "calibration ranges '" << path << "': tensor '" << key.str()
               << "' has no \"absmax\"";
      calibrated[key.str()] = *a;
    }
    return success();
  }

  std::optional<std::string> pinOf(Operation *op, StringRef key) {
    std::string raw = onnxNodeName(op);
    for (const std::string &p : keepFp32) {
      if (p == onnxOpType(op) || p == key || (!raw.empty() && p == raw)) {
        usedPins.insert(p);
        return p;
      }
    }
    return std::nullopt;
  }

  /// Why a range `absmax` of value `key` (an input or result of the op)
  /// cannot be held in the half type, or "".
  std::string rangeProblem(StringRef what, StringRef key, double absmax) {
    if (absmax * double(headroom) > maxHalf)
      return (what + " '" + key + "' reaches |x| = " + fmt(absmax) + " > " +
              fmt(maxHalf / double(headroom)))
          .str();
    if (absmax > 0 && absmax < minNormal)
      return (what + " '" + key + "' stays below |x| = " + fmt(absmax) +
              ", under the smallest normal " + halfName + " (" +
              fmt(minNormal) + ")")
          .str();
    return "";
  }

  /// Output names of the values the function returns: calibration records
  /// a model output under its name, not its node's key.
  DenseMap<Value, std::string> outputNames;

  /// The calibrated max |x| of `v` with the key it was recorded under.
  std::optional<std::pair<std::string, double>> rangeOf(Value v,
                                                        const NodeKeys &keys) {
    for (const std::string &key :
         {keys.values.lookup(v), outputNames.lookup(v)}) {
      if (key.empty())
        continue;
      auto it = calibrated.find(key);
      if (it != calibrated.end())
        return std::make_pair(key, it->second);
    }
    return std::nullopt;
  }

  Decision decide(Operation *op, const NodeKeys &keys,
                  const DenseMap<Operation *, Decision> &decided) {
    Decision d;
    StringRef type = onnxOpType(op);
    const std::string &key = keys.nodes.lookup(op);
    if (op->getNumRegions() > 0) {
      d.category = "rule";
      d.reason = "control flow runs in fp32";
      return d;
    }
    if (std::optional<std::string> pin = pinOf(op, key)) {
      d.category = "pin";
      d.reason = "--keep-fp32=" + *pin;
      return d;
    }
    // Kept fp32 on purpose by an earlier pass (--precision=int8's
    // kiln-onnx-insert-qdq: a contraction excluded by name or kept for its
    // sensitivity), with its reason; one it could not quantize (no constant
    // weights, no calibrated range) is decided here like any other.
    if (auto earlier = op->getAttrOfType<StringAttr>("kiln.fp32_reason")) {
      auto [category, detail] = earlier.getValue().split(": ");
      if (category == "exclude" || category == "sensitivity") {
        d.category = category.str();
        d.reason = detail.str();
        return d;
      }
    }
    if (requantized.contains(op)) {
      d.category = "rule";
      d.reason = "read only by QuantizeLinear (fused with it: no half "
                 "storage to save)";
      return d;
    }
    // Only pure-f32 ops change (a model may already use other float types).
    for (Value v : op->getOperands())
      if (isFloatTensor(v.getType()) && !isF32Tensor(v.getType())) {
        d.category = "rule";
        d.reason = "has non-f32 float operands";
        return d;
      }
    for (Type t : op->getResultTypes())
      if (isFloatTensor(t) && !isF32Tensor(t)) {
        d.category = "rule";
        d.reason = "has non-f32 float results";
        return d;
      }
    std::string why;
    OpClass cls = classify(type, why);
    if (cls == OpClass::Reduction) {
      int64_t n = reducedElements(op);
      if (n < 0 || n > int64_t(reductionLimit)) {
        d.category = "rule";
        d.reason = n < 0 ? "reduction over a dynamic number of elements"
                         : "reduction over " + std::to_string(n) +
                               " elements (> " +
                               std::to_string(int64_t(reductionLimit)) + ")";
        return d;
      }
      cls = OpClass::Follow;
    }
    if (cls == OpClass::Sensitive && hasStashedStatistics(op))
      cls = OpClass::Follow;
    if (cls == OpClass::Sensitive || cls == OpClass::Other) {
      d.category = "rule";
      d.reason = why;
      return d;
    }
    if (tf32Mode) {
      if (cls == OpClass::Contraction) {
        d.tf32 = true;
      } else {
        d.category = "rule";
        d.reason = "tf32 applies to contractions only";
      }
      return d;
    }
    if (cls == OpClass::Follow) {
      bool anyHalf = false, allHalf = true;
      for (unsigned i = 0; i < op->getNumOperands(); ++i) {
        Value v = op->getOperand(i);
        if (!isDataOperand(op, i) || isConstantF32(v) || isExternalWeight(v))
          continue;
        Operation *def = v.getDefiningOp();
        auto it = def ? decided.find(def) : decided.end();
        bool h =
            (it != decided.end() && it->second.half) || isDequantization(def);
        anyHalf |= h;
        allHalf &= h;
      }
      // A lookup in a weight (an embedding table): the table is stored in
      // half like the contractions' weights, so the lookup is half.
      if (!anyHalf && isWeightLookup(op))
        anyHalf = true;
      if (!anyHalf || !allHalf) {
        d.category = "inputs";
        d.reason = anyHalf ? "follows its fp32 inputs (mixed with half)"
                           : "follows its fp32 inputs";
        return d;
      }
    }
    // A half candidate: constants and calibrated ranges must fit.
    for (unsigned i = 0; i < op->getNumOperands(); ++i) {
      Value v = op->getOperand(i);
      if (!isDataOperand(op, i))
        continue;
      if (isConstantF32(v)) {
        double m = constantAbsMax(v);
        if (m > maxHalf) {
          d.category = "constant range";
          d.reason = "constant operand " + std::to_string(i) +
                     " reaches |x| = " + fmt(m) + " > " + fmt(maxHalf);
          return d;
        }
        continue;
      }
      std::optional<std::pair<std::string, double>> r = rangeOf(v, keys);
      if (!r)
        continue;
      std::string p = rangeProblem("input", r->first, r->second);
      if (!p.empty()) {
        d.category = "calibration";
        d.reason = p;
        return d;
      }
    }
    for (OpResult res : op->getResults()) {
      if (!isF32Tensor(res.getType()))
        continue;
      std::optional<std::pair<std::string, double>> r = rangeOf(res, keys);
      if (!r)
        continue;
      std::string p = rangeProblem("result", r->first, r->second);
      if (!p.empty()) {
        d.category = "calibration";
        d.reason = p;
        return d;
      }
    }
    if (!acceptsHalf(op)) {
      d.category = "rule";
      d.reason = ("the onnx schema of " + type + " has no " + halfName).str();
      return d;
    }
    d.half = true;
    return d;
  }

  /// Whether `op` verifies with its f32 data operands and results in the
  /// half type (the ONNX schemas of a few ops, e.g. Einsum, have no bf16):
  /// a detached clone is verified with diagnostics silenced.
  bool acceptsHalf(Operation *op) {
    MLIRContext *ctx = op->getContext();
    SmallVector<Type> placeholderTypes;
    SmallVector<unsigned> positions;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      if (isDataOperand(op, i)) {
        positions.push_back(i);
        placeholderTypes.push_back(
            cast<TensorType>(op->getOperand(i).getType()).clone(halfType));
      }
    OpBuilder b(ctx);
    Operation *placeholders = UnrealizedConversionCastOp::create(
        b, op->getLoc(), placeholderTypes, ValueRange{});
    IRMapping map;
    for (auto [k, i] : llvm::enumerate(positions))
      map.map(op->getOperand(i), placeholders->getResult(k));
    Operation *trial = op->clone(map);
    for (OpResult r : trial->getResults())
      if (isF32Tensor(r.getType()))
        r.setType(cast<TensorType>(r.getType()).clone(halfType));
    bool ok;
    {
      ScopedDiagnosticHandler silence(ctx,
                                      [](Diagnostic &) { return success(); });
      ok = succeeded(mlir::verify(trial, /*verifyRecursively=*/false));
    }
    trial->destroy();
    placeholders->destroy();
    return ok;
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::string mode = precision;
    if (mode == "fp32")
      return;
    if (mode == "fp16") {
      halfType = Float16Type::get(ctx);
    } else if (mode == "bf16") {
      halfType = BFloat16Type::get(ctx);
      maxHalf = 3.3895313892515355e38;
      minNormal = 1.1754943508222875e-38;
    } else if (mode == "tf32") {
      tf32Mode = true;
    } else {
      mlir::emitError(module.getLoc())
          << "unknown precision '" << mode
          << "' (expected fp32, tf32, fp16 or bf16)";
      return signalPassFailure();
    }
    halfName = mode;
    if (failed(loadRanges()))
      return signalPassFailure();
    converter = Converter(halfType);

    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      NodeKeys keys = computeNodeKeys(func);
      outputNames.clear();
      Operation *ret = func.getBody().back().getTerminator();
      for (auto [i, v] : llvm::enumerate(ret->getOperands()))
        if (auto n = func.getResultAttrOfType<StringAttr>(i, "kiln.name"))
          outputNames.try_emplace(v, n.str());
      collectRequantized(func.getBody().front());
      DenseMap<Operation *, Decision> decided;
      SmallVector<Operation *> order;
      for (Operation &op : func.getBody().front()) {
        // Casts keep the types the model (or an earlier pass) wrote.
        if (!keys.nodes.count(&op) ||
            isa<onnxops::CastOp, onnxops::CastLikeOp>(op))
          continue;
        bool floats = llvm::any_of(op.getOperandTypes(), isF32Tensor) ||
                      llvm::any_of(op.getResultTypes(), isF32Tensor);
        if (!floats)
          continue;
        decided[&op] = decide(&op, keys, decided);
        order.push_back(&op);
      }
      Builder b(ctx);
      for (Operation *op : order) {
        const Decision &d = decided[op];
        op->setAttr(kPrecisionAttr, b.getStringAttr(d.half   ? halfName
                                                    : d.tf32 ? "tf32"
                                                             : "fp32"));
        if (!d.half && !d.tf32)
          op->setAttr("kiln.fp32_reason",
                      b.getStringAttr(d.category + ": " + d.reason));
        else
          op->removeAttr("kiln.fp32_reason"); // an earlier pass's reason
      }
      if (!tf32Mode) {
        SmallVector<Operation *> halfOps;
        for (Operation *op : order)
          if (decided[op].half)
            halfOps.push_back(op);
        insertCasts(func, halfOps, keys);
        if (failed(cleanupCasts(func, converter)))
          return signalPassFailure();
      }
    }
    for (const std::string &p : keepFp32)
      if (!usedPins.contains(p))
        mlir::emitWarning(module.getLoc())
            << "--keep-fp32: '" << p
            << "' names no node or op type of the model";
    recordPlan();
  }

  /// Retypes the half ops, converts their f32 data operands (casts after
  /// the producer, constants converted once) and gives every other user of
  /// a half value an f32 cast of it.
  void insertCasts(func::FuncOp func, ArrayRef<Operation *> halfOps,
                   const NodeKeys &keys) {
    llvm::SmallPtrSet<Operation *, 32> isHalf(halfOps.begin(), halfOps.end());
    DenseMap<Value, Value> toHalf, toF32;
    auto castAfterDef = [&](Value v, Type elem, StringRef suffix) -> Value {
      OpBuilder b(func.getContext());
      if (Operation *def = v.getDefiningOp())
        b.setInsertionPointAfter(def);
      else
        b.setInsertionPointToStart(v.getParentBlock());
      std::string key = keys.values.lookup(v);
      if (key.empty())
        key = "value";
      Location loc = NameLoc::get(b.getStringAttr(key + "_to_" + suffix));
      return makeCast(b, loc, v, elem);
    };
    auto halfOf = [&](Value v) -> Value {
      if (!isF32Tensor(v.getType()))
        return v;
      Value &slot = toHalf[v];
      if (!slot) {
        if (isConstantF32(v))
          slot = converter.convert(v);
        else
          slot = castAfterDef(v, halfType, halfName);
      }
      return slot;
    };
    for (Operation *op : halfOps) {
      for (unsigned i = 0; i < op->getNumOperands(); ++i)
        if (isDataOperand(op, i))
          op->setOperand(i, halfOf(op->getOperand(i)));
      for (OpResult r : op->getResults())
        if (isF32Tensor(r.getType()))
          r.setType(cast<TensorType>(r.getType()).clone(halfType));
    }
    for (Operation *op : halfOps) {
      for (OpResult r : op->getResults()) {
        auto t = dyn_cast<TensorType>(r.getType());
        if (!t || t.getElementType() != halfType)
          continue;
        Value f32;
        for (OpOperand &use : llvm::make_early_inc_range(r.getUses())) {
          Operation *owner = use.getOwner();
          if (f32 && owner == f32.getDefiningOp())
            continue;
          if (isHalf.count(owner) &&
              isDataPosition(owner, use.getOperandNumber()))
            continue;
          if (!f32)
            f32 = castAfterDef(r, Float32Type::get(func.getContext()), "fp32");
          use.set(f32);
        }
      }
    }
  }

  /// `kiln.precision_plan` on the module (`kiln.float_precision_plan` when
  /// an int8 plan is there: the float rest of a --precision=int8 build):
  /// each decided node (program order) with its precision and, when fp32,
  /// why; the number of casts and of converted constants.
  void recordPlan() {
    ModuleOp module = getOperation();
    StringRef planName = "kiln.precision_plan";
    if (auto earlier = module->getAttrOfType<DictionaryAttr>(planName))
      if (auto mode = earlier.getAs<StringAttr>("precision");
          mode && mode.getValue() == "int8")
        planName = "kiln.float_precision_plan";
    Builder b(&getContext());
    SmallVector<Attribute> nodes;
    int64_t casts = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      NodeKeys keys = computeNodeKeys(func);
      for (Operation &op : func.getBody().front()) {
        if (op.hasAttr(kCastMarker)) {
          ++casts;
          continue;
        }
        auto p = op.getAttrOfType<StringAttr>(kPrecisionAttr);
        if (!p)
          continue;
        SmallVector<NamedAttribute> fields = {
            b.getNamedAttr("node", b.getStringAttr(keys.nodes.lookup(&op))),
            b.getNamedAttr("op", b.getStringAttr(onnxOpType(&op))),
            b.getNamedAttr("precision", p)};
        if (auto r = op.getAttrOfType<StringAttr>("kiln.fp32_reason"))
          fields.push_back(b.getNamedAttr("reason", r));
        nodes.push_back(b.getDictionaryAttr(fields));
      }
    }
    module->setAttr(
        planName,
        b.getDictionaryAttr(
            {b.getNamedAttr("precision", b.getStringAttr(halfName)),
             b.getNamedAttr("nodes", b.getArrayAttr(nodes)),
             b.getNamedAttr("casts", b.getI64IntegerAttr(casts)),
             b.getNamedAttr("converted_constants",
                            b.getI64IntegerAttr(converter.numConverted)),
             b.getNamedAttr("converted_bytes",
                            b.getI64IntegerAttr(converter.convertedBytes))}));
  }
};
} // namespace
