//===- InsertQDQ.cpp - Post-training int8 quantization --------------------===//
//
// kiln-onnx-insert-qdq (kilnc --precision=int8 --calibrate=DIR) makes a QDQ
// model of a float one, for kiln-onnx-fuse-qdq to turn into int8 products:
//
//   x ─ QuantizeLinear(sx, zx) ─ DequantizeLinear ─┐     (uint8, after x's
//                                                  Conv / MatMul / Gemm
//   W_int8 ─ DequantizeLinear(sw[c], 0, axis) ─────┘     producer, shared)
//
// The weights are quantized here, per output channel and symmetric
// (sw[c] = max |W[c]| / 127, round half to even), and the activation to
// uint8 over the calibrated range the method picks (CalibrationMethods.h):
// uint8 with a zero point is what the integer products take as they are
// (u8 x s8, VNNI's and AMX's form), holds a ReLU's [0, t] in all 256 steps
// and costs nothing at run time (the zero point's term is a compile-time
// column sum, docs/int8.md). Every other op stays fp32, as does a
// contraction that `exclude` names, whose weights are not constants, whose
// activation was not calibrated, or that is quantized already.
//
// Ranges are looked up by the keys of kiln-expose-intermediates
// (NodeKeys.h), which the calibration build records: the pass runs where
// that build exposes its values, after the graph simplification.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/Onnx/Transforms/Passes.h"

#include "ByteConstants.h"

#include "NodeKeys.h"

#include "kiln/Dialect/Kiln/IR/Precision.h"
#include "kiln/Dialect/Onnx/IR/OnnxOps.h"
#include "kiln/Dialect/Onnx/IR/OnnxUtils.h"
#include "kiln/Dialect/Onnx/Transforms/CalibrationMethods.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <cstring>

namespace mlir::kiln {
#define GEN_PASS_DEF_KILNONNXINSERTQDQ
#include "kiln/Dialect/Onnx/Transforms/Passes.h.inc"
} // namespace mlir::kiln

using namespace mlir;
using namespace mlir::kiln;
using namespace mlir::kiln::onnxops;
using int8::TensorRecord;

namespace {

Value f32Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                  ArrayRef<float> values, StringRef hint) {
  std::vector<char> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return makeBytesConstant(b, loc, RankedTensorType::get(shape, b.getF32Type()),
                           bytes, hint);
}

Value int8Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> shape,
                   Type elem, ArrayRef<int64_t> values, StringRef hint) {
  std::vector<char> bytes(values.size());
  for (auto [i, v] : llvm::enumerate(values))
    bytes[i] = static_cast<char>(v);
  return makeBytesConstant(b, loc, RankedTensorType::get(shape, elem), bytes,
                           hint);
}

bool isF32Tensor(Type t) {
  auto rt = dyn_cast<RankedTensorType>(t);
  return rt && rt.getElementType().isF32();
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

/// One contraction's decision and, for int8 ones, its parameters (the
/// report's entry).
struct Decision {
  Operation *op = nullptr;
  std::string node, reason, input;
  bool int8 = false;
  double lo = 0, hi = 0, min = 0, max = 0;
  float scale = 1;
  int64_t zeroPoint = 0, channels = 0;
  float weightScaleMin = 0, weightScaleMax = 0;
  int64_t axis = 0;
  /// The layer's own quantization error, estimated (sensitivity()): the
  /// relative mean squared errors of its input and of its weights, and the
  /// relative L2 error of its output they make.
  double inputError = 0, weightError = 0, sensitivity = 0;
  int64_t rank = 0;
};

/// Per-channel symmetric int8 weights: scales (max |W[c]| / 127) and values.
struct QuantizedWeights {
  SmallVector<float> scale;
  SmallVector<int64_t> q;
  /// ||dequantized - W||^2 / ||W||^2.
  double relError = 0;
};

QuantizedWeights quantizeWeights(ArrayRef<double> values, RankedTensorType type,
                                 int64_t axis) {
  int64_t channels = type.getDimSize(axis);
  int64_t inner = 1;
  for (int64_t i = axis + 1; i < type.getRank(); ++i)
    inner *= type.getDimSize(i);
  auto channelOf = [&](int64_t i) { return (i / inner) % channels; };
  QuantizedWeights w;
  w.scale.assign(channels, 0.0f);
  for (auto [i, v] : llvm::enumerate(values))
    w.scale[channelOf(i)] =
        std::max(w.scale[channelOf(i)], static_cast<float>(std::fabs(v)));
  for (float &s : w.scale)
    s = s > 0 && std::isfinite(s) ? s / 127.0f : 1.0f;
  w.q.resize(values.size());
  double noise = 0, signal = 0;
  for (auto [i, v] : llvm::enumerate(values)) {
    float s = w.scale[channelOf(i)];
    double r = std::nearbyint(static_cast<float>(v) / s);
    w.q[i] = static_cast<int64_t>(std::clamp(r, -127.0, 127.0));
    double d = static_cast<double>(w.q[i]) * s - v;
    noise += d * d;
    signal += v * v;
  }
  w.relError = signal > 0 ? noise / signal : 0;
  return w;
}

struct InsertQDQPass : public kiln::impl::KilnOnnxInsertQDQBase<InsertQDQPass> {
  using Base::Base;

  int8::Method parsedMethod;
  llvm::StringMap<TensorRecord> records;
  llvm::StringSet<> usedExcludes;
  DenseMap<Value, std::string> outputNames;
  /// Each function's node and value keys.
  DenseMap<Operation *, NodeKeys> funcKeys;
  /// The DequantizeLinear of each quantized activation, and of each
  /// weight constant (by value and channel axis).
  DenseMap<Value, Value> dequantized;
  /// Residual Adds' operands that read a dequantized activation.
  int64_t residuals = 0;
  int64_t shortcuts = 0;
  int64_t pools = 0;
  /// Values quantized as attention inputs (Q, K, V), and the attention
  /// chains that read them.
  int64_t attentionValues = 0, attentions = 0;
  DenseMap<std::pair<Value, int64_t>, Value> weights;
  SmallVector<Decision> decisions;

  LogicalResult loadRanges() {
    Location loc = getOperation().getLoc();
    std::string path = ranges;
    if (path.empty())
      return mlir::emitError(loc)
             << "--precision=int8 needs calibration ranges: --calibrate=DIR "
                "(samples to run the fp32 model on) or "
                "--calibration-ranges=FILE.json";
    auto buf = llvm::MemoryBuffer::getFile(path);
    if (!buf)
      return mlir::emitError(loc) << "cannot read calibration ranges '" << path
                                  << "': " << buf.getError().message();
    llvm::Expected<llvm::json::Value> json =
        llvm::json::parse((*buf)->getBuffer());
    if (!json)
      return mlir::emitError(loc)
             << "calibration ranges '" << path
             << "' are not JSON: " << llvm::toString(json.takeError());
    const llvm::json::Object *top = json->getAsObject();
    const llvm::json::Object *tensors =
        top ? top->getObject("tensors") : nullptr;
    if (!tensors)
      return mlir::emitError(loc) << "calibration ranges '" << path
                                  << "' have no \"tensors\" object";
    for (const auto &[key, v] : *tensors) {
      const llvm::json::Object *o = v.getAsObject();
      std::optional<double> a = o ? o->getNumber("absmax") : std::nullopt;
      if (!a)
        return mlir::emitError(loc)
               << "calibration ranges '" << path << "': tensor '" << key.str()
               << "' has no \"absmax\"";
      TensorRecord r;
      r.absmax = *a;
      r.min = o->getNumber("min").value_or(-*a);
      r.max = o->getNumber("max").value_or(*a);
      if (const llvm::json::Array *h = o->getArray("hist"))
        for (const llvm::json::Value &c : *h)
          r.hist.push_back(c.getAsInteger().value_or(0));
      records[key.str()] = std::move(r);
    }
    return success();
  }

  std::optional<std::string> excludedBy(Operation *op, StringRef key) {
    std::string raw = onnxNodeName(op);
    for (const std::string &e : exclude)
      if (e == onnxOpType(op) || e == key || (!raw.empty() && e == raw)) {
        usedExcludes.insert(e);
        return e;
      }
    return std::nullopt;
  }

  /// The weights' output-channel axis, or a reason the op is not a
  /// contraction the integer products take.
  FailureOr<int64_t> weightAxis(Operation *op, std::string &why) {
    auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!x || !w || !w.hasStaticShape()) {
      why = "rule: needs ranked operands and static weights";
      return failure();
    }
    if (isa<MatMulOp>(op)) {
      if (w.getRank() != 2 || x.getRank() < 2) {
        why = "rule: MatMul weights must be [K, N] with activations of rank "
              ">= 2";
        return failure();
      }
      return 1;
    }
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      if (gemm.getTransAAttr().getInt() != 0) {
        why = "rule: Gemm with transA";
        return failure();
      }
      return gemm.getTransBAttr().getInt() != 0 ? 0 : 1;
    }
    if (isChannelsLast(op) ||
        w.getRank() !=
            cast<RankedTensorType>(op->getResult(0).getType()).getRank()) {
      why = "rule: Conv weights in an unexpected layout";
      return failure();
    }
    return 0;
  }

  /// The calibration record of `v`, with the key it was found under.
  const TensorRecord *recordOf(Value v, const NodeKeys &keys,
                               std::string &key) {
    for (const std::string &k : {keys.values.lookup(v), outputNames.lookup(v)})
      if (!k.empty())
        if (auto it = records.find(k); it != records.end()) {
          key = k;
          return &it->second;
        }
    key = keys.values.lookup(v);
    return nullptr;
  }

  void decide(Decision &d, const NodeKeys &keys) {
    Operation *op = d.op;
    if (std::optional<std::string> e = excludedBy(op, d.node)) {
      d.reason = "exclude: --int8-exclude=" + *e;
      return;
    }
    Value x = op->getOperand(0), w = op->getOperand(1);
    if (!isF32Tensor(x.getType()) || !isF32Tensor(op->getResult(0).getType()) ||
        !isF32Tensor(w.getType())) {
      d.reason = "rule: not an f32 contraction";
      return;
    }
    if (x.getDefiningOp<DequantizeLinearOp>() ||
        w.getDefiningOp<DequantizeLinearOp>()) {
      d.reason = "rule: already quantized";
      return;
    }
    if (!w.getDefiningOp<arith::ConstantOp>() ||
        !getConstantFloatValues(w).has_value()) {
      d.reason = "rule: weights are not constants";
      return;
    }
    std::string why;
    FailureOr<int64_t> axis = weightAxis(op, why);
    if (failed(axis)) {
      d.reason = why;
      return;
    }
    const TensorRecord *r = recordOf(x, keys, d.input);
    if (!r) {
      d.reason = "calibration: no range recorded for input '" + d.input + "'";
      return;
    }
    std::string error;
    if (!int8::rangeOf(*r, parsedMethod, d.lo, d.hi, error)) {
      d.reason = "calibration: input '" + d.input + "' " + error;
      return;
    }
    if (!std::isfinite(d.lo) || !std::isfinite(d.hi) || d.hi - d.lo <= 0) {
      d.reason = "calibration: input '" + d.input + "' has the range [" +
                 fmt(d.lo) + ", " + fmt(d.hi) + "]";
      return;
    }
    d.min = r->min;
    d.max = r->max;
    int8::uint8Params(d.lo, d.hi, d.scale, d.zeroPoint);
    d.int8 = true;
    d.axis = *axis;
    d.channels = cast<RankedTensorType>(w.getType()).getDimSize(*axis);
    if (keepCount > 0 && r->hist.empty()) {
      d.int8 = false;
      d.reason = "calibration: input '" + d.input +
                 "' has no histogram, which --int8-keep-fp32 ranks by";
      return;
    }
    sensitivity(d, *r);
  }

  /// The layer's own error: the relative L2 error of y = W x when only
  /// this layer's x and W are quantized, estimated from the calibration
  /// histogram of x and the weights as sqrt(e_x + e_w), e_x and e_w the
  /// relative mean squared errors of x and W (int8::activationError,
  /// QuantizedWeights::relError). Exact for errors uncorrelated with each
  /// other and with the values, which rounding errors nearly are.
  void sensitivity(Decision &d, const TensorRecord &r) {
    Value w = d.op->getOperand(1);
    d.inputError = int8::activationError(r, d.lo, d.hi, d.scale);
    d.weightError = quantizeWeights(*getConstantFloatValues(w),
                                    cast<RankedTensorType>(w.getType()), d.axis)
                        .relError;
    d.sensitivity = std::sqrt(d.inputError + d.weightError);
  }

  /// --int8-keep-fp32=N: the N layers of the largest sensitivity stay fp32.
  void keepMostSensitive() {
    SmallVector<Decision *> ranked;
    for (Decision &d : decisions)
      if (d.int8)
        ranked.push_back(&d);
    llvm::stable_sort(ranked, [](const Decision *a, const Decision *b) {
      return a->sensitivity > b->sensitivity;
    });
    for (auto [i, d] : llvm::enumerate(ranked)) {
      d->rank = static_cast<int64_t>(i) + 1;
      if (static_cast<int64_t>(i) >= keepCount)
        continue;
      d->int8 = false;
      d->reason = "sensitivity: --int8-keep-fp32=" + std::to_string(keepCount) +
                  ", rank " + std::to_string(d->rank) + " of " +
                  std::to_string(ranked.size()) + ", estimated rel L2 " +
                  fmt(d->sensitivity);
    }
  }

  /// A uint8 QuantizeLinear of `x` (scale, zero point) right after its
  /// producer and its DequantizeLinear, named `base`_QuantizeLinear and
  /// `base`_DequantizeLinear; returns the DequantizeLinear's value (x's
  /// uses are the caller's to move).
  Value quantizeAfter(Value x, StringRef base, float scale, int64_t zeroPoint) {
    OpBuilder b(&getContext());
    if (Operation *def = x.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(x.getParentBlock());
    Location qloc =
        NameLoc::get(b.getStringAttr(base.str() + "_QuantizeLinear"));
    Location dqloc =
        NameLoc::get(b.getStringAttr(base.str() + "_DequantizeLinear"));
    auto u8 = IntegerType::get(&getContext(), 8, IntegerType::Unsigned);
    Value s = f32Constant(b, qloc, {}, {scale}, "");
    Value z = int8Constant(b, qloc, {}, u8, {zeroPoint}, "");
    auto xt = cast<RankedTensorType>(x.getType());
    Value q = QuantizeLinearOp::create(b, qloc, Type(xt.clone(u8)), x, s, z,
                                       uint64_t(1));
    return DequantizeLinearOp::create(b, dqloc, Type(xt), q, s, z, uint64_t(1));
  }

  /// QuantizeLinear + DequantizeLinear of activation `x` after its
  /// producer, once per value.
  Value dequantizedActivation(const Decision &d) {
    Value x = d.op->getOperand(0);
    Value &slot = dequantized[x];
    if (!slot)
      slot = quantizeAfter(x, d.input.empty() ? "x" : d.input, d.scale,
                           d.zeroPoint);
    return slot;
  }

  /// Per-channel symmetric int8 weights along `axis`, dequantized.
  Value dequantizedWeights(Decision &d, int64_t axis) {
    Value w = d.op->getOperand(1);
    auto wt = cast<RankedTensorType>(w.getType());
    Value &slot = weights[{w, axis}];
    int64_t channels = wt.getDimSize(axis);
    QuantizedWeights qw = quantizeWeights(*getConstantFloatValues(w), wt, axis);
    SmallVector<float> &scale = qw.scale;
    SmallVector<int64_t> &q = qw.q;
    d.weightScaleMin = *llvm::min_element(scale);
    d.weightScaleMax = *llvm::max_element(scale);
    if (slot)
      return slot;
    OpBuilder b(&getContext());
    b.setInsertionPointAfter(w.getDefiningOp());
    Location loc = NameLoc::get(b.getStringAttr(d.node + "_weights_int8"));
    auto i8 = IntegerType::get(&getContext(), 8);
    Value wq =
        int8Constant(b, loc, wt.getShape(), i8, q, d.node + "_weights_int8");
    Value s = f32Constant(b, loc, {channels}, scale, d.node + "_weights_scale");
    Value z = int8Constant(b, loc, {channels}, i8,
                           SmallVector<int64_t>(channels, 0), "");
    slot = DequantizeLinearOp::create(b, loc, Type(wt), wq, s, z,
                                      static_cast<uint64_t>(axis));
    return slot;
  }

  void rewrite(Decision &d, int64_t axis) {
    Value x = dequantizedActivation(d);
    Value w = dequantizedWeights(d, axis);
    d.op->setOperand(0, x);
    d.op->setOperand(1, w);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    if (!int8::parseMethod(method, parsedMethod, error)) {
      mlir::emitError(module.getLoc()) << error;
      return signalPassFailure();
    }
    if (failed(loadRanges()))
      return signalPassFailure();
    Builder b(&getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      NodeKeys &keys = funcKeys[func] = computeNodeKeys(func);
      outputNames.clear();
      Operation *ret = func.getBody().back().getTerminator();
      for (auto [i, v] : llvm::enumerate(ret->getOperands()))
        if (auto n = func.getResultAttrOfType<StringAttr>(i, "kiln.name"))
          outputNames.try_emplace(v, n.str());
      SmallVector<Operation *> contractions;
      for (Operation &op : func.getBody().front())
        if (isa<MatMulOp, GemmOp, ConvOp>(op) && keys.nodes.count(&op))
          contractions.push_back(&op);
      for (Operation *op : contractions) {
        Decision d;
        d.op = op;
        d.node = keys.nodes.lookup(op);
        decide(d, keys);
        decisions.push_back(std::move(d));
      }
    }
    if (keepCount > 0)
      keepMostSensitive();
    for (Decision &d : decisions) {
      if (d.int8)
        rewrite(d, d.axis);
      d.op->setAttr(kPrecisionAttr, b.getStringAttr(d.int8 ? "int8" : "fp32"));
      if (!d.int8)
        d.op->setAttr("kiln.fp32_reason", b.getStringAttr(d.reason));
    }
    if (quantizeResiduals) {
      quantizeResidualAdds();
      quantizeShortcuts();
    }
    quantizePoolInputs();
    if (attentionInputs)
      quantizeAttentionInputs();
    for (const std::string &e : exclude)
      if (!usedExcludes.contains(e))
        mlir::emitWarning(module.getLoc())
            << "--int8-exclude: '" << e
            << "' names no node or op type of the model";
    recordPlan();
  }

  /// An Add of two activations of one shape (a residual connection) reading
  /// a value that contractions read quantized reads its DequantizeLinear
  /// instead: the value's producer then writes uint8 only (its QuantizeLinear
  /// its one user when nothing else reads it), the Add dequantizes in its
  /// own kernel. Counted in the plan (`residuals`).
  void quantizeResidualAdds() {
    for (auto &[x, dq] : dequantized) {
      auto xt = cast<RankedTensorType>(x.getType());
      SmallVector<OpOperand *> uses;
      for (OpOperand &use : x.getUses()) {
        auto add = dyn_cast<AddOp>(use.getOwner());
        if (!add)
          continue;
        Value other = add->getOperand(1 - use.getOperandNumber());
        if (other.getType() != xt || other.getDefiningOp<arith::ConstantOp>())
          continue;
        uses.push_back(&use);
      }
      for (OpOperand *use : uses) {
        // The Add may come before the contraction that quantized x: the
        // QuantizeLinear and DequantizeLinear sit right after x's producer.
        use->set(dq);
        ++residuals;
      }
    }
  }

  /// An Add of two int8 contractions' values, each read by it alone (the
  /// end of ResNet's first block of a stage: the last convolution's value
  /// and the downsampling shortcut's): the earlier one is quantized too,
  /// over its calibrated range (onnxruntime's quantize_static quantizes
  /// both inputs of an Add). kiln-onnx-fuse-qdq then requantizes that
  /// product in its epilogue (it writes uint8, not a float copy for the
  /// Add) and folds the Add into the later product, which reads the uint8
  /// as its residual. Counted in the plan (`shortcuts`).
  void quantizeShortcuts() {
    llvm::SmallPtrSet<Operation *, 16> int8Ops;
    for (const Decision &d : decisions)
      if (d.int8)
        int8Ops.insert(d.op);
    auto product = [&](Value v) -> Operation * {
      Operation *def = v.getDefiningOp();
      return def && int8Ops.contains(def) && v.hasOneUse() &&
                     isF32Tensor(v.getType())
                 ? def
                 : nullptr;
    };
    SmallVector<Value> found;
    getOperation().walk([&](AddOp add) {
      Operation *a = product(add.getA()), *b = product(add.getB());
      if (!a || !b || a == b || add.getA().getType() != add.getB().getType() ||
          a->getBlock() != b->getBlock())
        return;
      found.push_back(a->isBeforeInBlock(b) ? add.getA() : add.getB());
    });
    for (Value v : found) {
      Operation *func = v.getParentBlock()->getParentOp();
      NodeKeys &keys = funcKeys[func];
      std::string key;
      const TensorRecord *r = recordOf(v, keys, key);
      double lo = 0, hi = 0;
      std::string error;
      if (!r || !int8::rangeOf(*r, parsedMethod, lo, hi, error) ||
          !std::isfinite(lo) || !std::isfinite(hi) || hi - lo <= 0)
        continue;
      float scale = 0;
      int64_t zeroPoint = 0;
      int8::uint8Params(lo, hi, scale, zeroPoint);
      Value dq = quantizeAfter(v, key, scale, zeroPoint);
      Operation *q = dq.getDefiningOp()->getOperand(0).getDefiningOp();
      v.replaceAllUsesExcept(dq, q);
      ++shortcuts;
    }
  }

  /// A quantized value that a MaxPool produces from a value nothing else
  /// reads: that input is quantized with the same scale and zero point, so
  /// that kiln-onnx-fuse-qdq's fold makes the pool one of uint8 values
  /// (max commutes with the monotone quantization, clamping included: the
  /// same results) and the input's producer writes uint8 (a network's stem
  /// convolution: a quarter of the bytes of its half output). Counted in
  /// the plan (`pools`).
  void quantizePoolInputs() {
    SmallVector<std::pair<MaxPoolOp, Value>> found;
    for (auto &[x, dq] : dequantized) {
      auto pool = x.getDefiningOp<MaxPoolOp>();
      if (!pool ||
          (pool->getNumResults() > 1 && !pool->getResult(1).use_empty()))
        continue;
      Value in = pool.getX();
      if (!in.hasOneUse() || !isF32Tensor(in.getType()))
        continue;
      found.push_back({pool, dq});
    }
    for (auto [pool, dq] : found) {
      auto q =
          dq.getDefiningOp()->getOperand(0).getDefiningOp<QuantizeLinearOp>();
      if (!q)
        continue;
      std::optional<SmallVector<double>> scale =
          getConstantFloatValues(q.getYScale());
      std::optional<SmallVector<int64_t>> zero =
          getConstantIntValues(q->getOperand(2));
      if (!scale || scale->size() != 1 || !zero || zero->size() != 1)
        continue;
      pool->setOperand(0,
                       quantizeAfter(pool.getX(), onnxNodeName(pool) + "_input",
                                     float(scale->front()), zero->front()));
      ++pools;
    }
  }

  /// The value that `v` moves elements of (through Split, Slice, Reshape,
  /// Transpose, Squeeze, Unsqueeze, Flatten, Identity), where every value
  /// on the way, that one included, has one user; null when there is none.
  static Value movedFrom(Value v) {
    while (true) {
      if (!v.hasOneUse())
        return Value();
      Operation *def = v.getDefiningOp();
      if (!def || !movesElements(def))
        return v;
      if (isa<SplitOp>(def) && !llvm::all_of(def->getResults(), [](Value r) {
            return r.use_empty() || r.hasOneUse();
          }))
        return Value();
      v = def->getOperand(0);
    }
  }

  /// A product by a scalar constant (Mul or Div), an additive mask, or
  /// nothing: the scores' way from Q·Kᵀ to the Softmax.
  static MatMulOp scoresProduct(Value x) {
    while (Operation *def = x.getDefiningOp()) {
      if (auto mm = dyn_cast<MatMulOp>(def))
        return mm;
      if (!isa<MulOp, DivOp, AddOp>(def) || !x.hasOneUse())
        return MatMulOp();
      Value a = def->getOperand(0), b = def->getOperand(1);
      // Follow the operand that is not a constant (an Add's mask: the one
      // that does not lead to a MatMul).
      if (isa<AddOp>(def))
        x = a.getDefiningOp<MatMulOp>() || scoresProduct(a) ? a : b;
      else
        x = getConstantFloatValues(b) ? a : b;
    }
    return MatMulOp();
  }

  /// `attention-inputs`: Q, K and V of each Softmax(Q·Kᵀ ...)·V chain whose
  /// three operands are data movement of calibrated f32 values nothing
  /// else reads get a uint8 QDQ after those values (once a value: BERT's
  /// Q, K and V are one product's Split). A chain with an operand that is
  /// not such a value, or whose products --int8-exclude names, is left.
  void quantizeAttentionInputs() {
    DenseMap<Value, Value> quantized;
    SmallVector<SoftmaxOp> softmaxes;
    getOperation().walk([&](SoftmaxOp op) { softmaxes.push_back(op); });
    for (SoftmaxOp sm : softmaxes) {
      Value probs = sm.getResult();
      if (!probs.hasOneUse())
        continue;
      auto pv = dyn_cast<MatMulOp>(*probs.getUsers().begin());
      MatMulOp qk = scoresProduct(sm.getInput());
      if (!pv || pv.getA() != probs || !qk)
        continue;
      NodeKeys &keys = funcKeys[sm->getParentOfType<func::FuncOp>()];
      if (excludedBy(qk, keys.nodes.lookup(qk)) ||
          excludedBy(pv, keys.nodes.lookup(pv)))
        continue;
      SmallVector<Value> sources;
      for (Value operand : {qk.getA(), qk.getB(), pv.getB()})
        if (Value src = movedFrom(operand);
            src && isF32Tensor(src.getType()) &&
            !src.getDefiningOp<arith::ConstantOp>())
          sources.push_back(src);
      if (sources.size() != 3)
        continue;
      struct Params {
        std::string key;
        float scale = 0;
        int64_t zeroPoint = 0;
      };
      SmallVector<Params> params;
      for (Value src : sources) {
        Params p;
        if (quantized.count(src)) { // by an earlier chain
          params.push_back(p);
          continue;
        }
        const TensorRecord *r = recordOf(src, keys, p.key);
        double lo = 0, hi = 0;
        std::string error;
        if (!r || !int8::rangeOf(*r, parsedMethod, lo, hi, error) ||
            !std::isfinite(lo) || !std::isfinite(hi) || hi - lo <= 0)
          break;
        int8::uint8Params(lo, hi, p.scale, p.zeroPoint);
        params.push_back(p);
      }
      if (params.size() != 3)
        continue;
      for (auto [src, p] : llvm::zip(sources, params)) {
        if (quantized.count(src))
          continue;
        Value dq = quantizeAfter(src, p.key, p.scale, p.zeroPoint);
        Operation *q = dq.getDefiningOp()->getOperand(0).getDefiningOp();
        src.replaceAllUsesExcept(dq, q);
        quantized[src] = dq;
        ++attentionValues;
      }
      ++attentions;
    }
  }

  /// `kiln.precision_plan`: the method and, per contraction (program
  /// order), int8 with its activation's range and parameters, or fp32 and
  /// why.
  void recordPlan() {
    Builder b(&getContext());
    SmallVector<Attribute> nodes;
    int64_t quantizedBytes = 0;
    for (const Decision &d : decisions) {
      SmallVector<NamedAttribute> f = {
          b.getNamedAttr("node", b.getStringAttr(d.node)),
          b.getNamedAttr("op", b.getStringAttr(onnxOpType(d.op))),
          b.getNamedAttr("precision",
                         b.getStringAttr(d.int8 ? "int8" : "fp32"))};
      if (d.rank > 0) {
        f.push_back(
            b.getNamedAttr("sensitivity", b.getF64FloatAttr(d.sensitivity)));
        f.push_back(
            b.getNamedAttr("input_error", b.getF64FloatAttr(d.inputError)));
        f.push_back(
            b.getNamedAttr("weight_error", b.getF64FloatAttr(d.weightError)));
        f.push_back(
            b.getNamedAttr("sensitivity_rank", b.getI64IntegerAttr(d.rank)));
      }
      if (!d.int8) {
        f.push_back(b.getNamedAttr("reason", b.getStringAttr(d.reason)));
      } else {
        f.push_back(b.getNamedAttr("input", b.getStringAttr(d.input)));
        f.push_back(
            b.getNamedAttr("calibrated", b.getF64ArrayAttr({d.min, d.max})));
        f.push_back(b.getNamedAttr("range", b.getF64ArrayAttr({d.lo, d.hi})));
        f.push_back(b.getNamedAttr("scale", b.getF64FloatAttr(d.scale)));
        f.push_back(
            b.getNamedAttr("zero_point", b.getI64IntegerAttr(d.zeroPoint)));
        f.push_back(
            b.getNamedAttr("weight_channels", b.getI64IntegerAttr(d.channels)));
        f.push_back(b.getNamedAttr(
            "weight_scales",
            b.getF64ArrayAttr({d.weightScaleMin, d.weightScaleMax})));
      }
      nodes.push_back(b.getDictionaryAttr(f));
    }
    for (auto &[key, dq] : weights)
      quantizedBytes += cast<RankedTensorType>(dq.getType()).getNumElements();
    getOperation()->setAttr(
        "kiln.precision_plan",
        b.getDictionaryAttr(
            {b.getNamedAttr("precision", b.getStringAttr("int8")),
             b.getNamedAttr("calibration_method",
                            b.getStringAttr(parsedMethod.str())),
             b.getNamedAttr("nodes", b.getArrayAttr(nodes)),
             b.getNamedAttr("casts", b.getI64IntegerAttr(0)),
             b.getNamedAttr("converted_constants",
                            b.getI64IntegerAttr(weights.size())),
             b.getNamedAttr("converted_bytes",
                            b.getI64IntegerAttr(quantizedBytes)),
             b.getNamedAttr("residuals", b.getI64IntegerAttr(residuals)),
             b.getNamedAttr("shortcuts", b.getI64IntegerAttr(shortcuts)),
             b.getNamedAttr("pools", b.getI64IntegerAttr(pools))}));
    if (attentionInputs) {
      auto plan =
          getOperation()->getAttrOfType<DictionaryAttr>("kiln.precision_plan");
      NamedAttrList fields(plan);
      fields.set("attention_inputs", b.getI64IntegerAttr(attentionValues));
      fields.set("attentions", b.getI64IntegerAttr(attentions));
      getOperation()->setAttr("kiln.precision_plan",
                              fields.getDictionary(&getContext()));
    }
  }
};
} // namespace
